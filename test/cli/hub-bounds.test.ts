// Issue 28 with a real `agora hub` process: the warning of a hub open beyond loopback without a token, a private
// address refused as a bad request, a room participant on loopback refused, and the checkpoint cap's flag.
import { afterEach, describe, expect, it } from 'vitest';
import { startHubCommand, type StartedCommand } from '../helpers/cli.js';

const hubs: StartedCommand[] = [];
afterEach(async () => {
  for (const hub of hubs.splice(0)) await hub.stop('SIGKILL');
});

async function startHubProcess(args: string[]): Promise<StartedCommand> {
  const hub = await startHubCommand(args);
  hubs.push(hub);
  return hub;
}

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('agora hub bounds', () => {
  it('warns when it listens beyond loopback without a token, and refuses private agents and participants with 400', async () => {
    const hub = await startHubProcess(['--host', '0.0.0.0', '--max-run-bytes', '4096']);
    expect(hub.output()).toMatch(/without a token/);
    const registered = await post(`${hub.url}/agents`, { url: 'http://127.0.0.1:4711' });
    expect(registered.status).toBe(400);
    expect(await registered.text()).toContain('--allow-private-agents');
    const room = await post(`${hub.url}/rooms`, {
      topic: 't',
      participants: ['http://127.0.0.1:4711/admin/export', 'http://10.0.0.1/'],
    });
    expect(room.status).toBe(400);
    const run = {
      id: 'r1',
      goal: 'g',
      status: 'failed',
      hops: [],
      next: null,
      owner: 'me',
      leaseUntil: 0,
      createdAt: 1,
      updatedAt: 1,
      maxHops: 10,
      error: 'e'.repeat(1999),
    };
    const big = await fetch(`${hub.url}/runs/r1`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        run: {
          ...run,
          goal: 'g'.repeat(1999),
          hops: Array.from({ length: 3 }, () => ({
            agentId: 'a',
            agentName: 'a',
            url: 'http://a',
            by: 'keywords',
            reason: 'r'.repeat(1999),
            ok: false,
            startedAt: 1,
            finishedAt: 2,
          })),
        },
      }),
    });
    expect(big.status).toBe(413);
  });

  it('says nothing of tokens on loopback', async () => {
    const hub = await startHubProcess([]);
    expect(hub.output()).not.toMatch(/without a token/);
  });

  it('logs one record per request, with its fields, and its banner as records with --log-format json', async () => {
    const hub = await startHubProcess(['--log-format', 'json']);
    expect((await fetch(`${hub.url}/agents`)).status).toBe(200);
    expect((await fetch(`${hub.url}/nowhere`)).status).toBe(404);
    await hub.stop('SIGTERM');
    const records = hub
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records).toContainEqual(
      expect.objectContaining({ level: 'info', event: 'listening', url: expect.stringMatching(/^http:\/\//) }),
    );
    expect(records).toContainEqual(
      expect.objectContaining({
        level: 'info',
        method: 'GET',
        path: '/agents',
        status: 200,
        ms: expect.any(Number),
        requestId: expect.any(String),
      }),
    );
    expect(records).toContainEqual(expect.objectContaining({ method: 'GET', path: '/nowhere', status: 404 }));
    expect(
      hub
        .output()
        .split('\n')
        .filter((line) => line && !line.startsWith('{')),
    ).toEqual([]);
  });

  it('logs no request with --quiet-requests', async () => {
    const hub = await startHubProcess(['--quiet-requests']);
    await (await fetch(`${hub.url}/agents`)).text();
    await hub.stop('SIGTERM');
    expect(hub.output()).not.toMatch(/GET \/agents/);
  });
});
