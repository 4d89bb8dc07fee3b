// Issue 28 with a real `agora hub` process: the warning of a hub open beyond loopback without a token, a private
// address refused as a bad request, a room participant on loopback refused, and the checkpoint cap's flag.
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { cliArgs } from '../helpers/cli.js';

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
});

/** `agora hub …` in its own process; resolves once it listens, with everything it printed so far. */
function startHubProcess(args: string[]): Promise<{ url: string; output(): string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, cliArgs(['hub', '--port', '0', ...args]), { env: { ...process.env, ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: '', AGORA_HUB_STORE: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve({ url: match[1]!.replace('0.0.0.0', '127.0.0.1'), output: () => output });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`agora hub exited with ${code}:\n${output}`)));
  });
}

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('agora hub bounds', () => {
  it('warns when it listens beyond loopback without a token, and refuses private agents and participants with 400', async () => {
    const hub = await startHubProcess(['--host', '0.0.0.0', '--max-run-bytes', '4096']);
    expect(hub.output()).toMatch(/without a token/);
    const registered = await post(`${hub.url}/agents`, { url: 'http://127.0.0.1:4711' });
    expect(registered.status).toBe(400);
    expect(await registered.text()).toContain('--allow-private-agents');
    const room = await post(`${hub.url}/rooms`, { topic: 't', participants: ['http://127.0.0.1:4711/admin/export', 'http://10.0.0.1/'] });
    expect(room.status).toBe(400);
    const run = { id: 'r1', goal: 'g', status: 'failed', hops: [], next: null, owner: 'me', leaseUntil: 0, createdAt: 1, updatedAt: 1, maxHops: 10, error: 'e'.repeat(1999) };
    const big = await fetch(`${hub.url}/runs/r1`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ run: { ...run, goal: 'g'.repeat(1999), hops: Array.from({ length: 3 }, () => ({ agentId: 'a', agentName: 'a', url: 'http://a', by: 'keywords', reason: 'r'.repeat(1999), ok: false, startedAt: 1, finishedAt: 2 })) } }) });
    expect(big.status).toBe(413);
  });

  it('says nothing of tokens on loopback', async () => {
    const hub = await startHubProcess([]);
    expect(hub.output()).not.toMatch(/without a token/);
  });
});
