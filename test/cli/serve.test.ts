import { unlink, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { hashText } from '../../src/protocol/document.js';
import { echoProtocol, eventually, makeAgentFolder } from '../helpers/agent-folder.js';
import { runCli, startServe } from '../helpers/cli.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const NO_KEY = { ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: '' };
const FS_FAULTS = fileURLToPath(new URL('../helpers/fs-faults.mjs', import.meta.url));
const withFaults = (env: NodeJS.ProcessEnv) => ({
  ...NO_KEY,
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${FS_FAULTS}`.trim(),
  ...env,
});

describe('agora serve', () => {
  it('serves a temporary agent folder, answers queries and shuts down cleanly on SIGTERM', async () => {
    const folder = await makeAgentFolder({
      'protocols/echo.md': echoProtocol(),
      'routines/echo.ts': 'export default (body: { message: string }) => ({ echo: body.message });',
      'protocols/broken.md': '---\nname: [\n---\n',
    });
    cleanups.push(folder.cleanup);
    const agent = await startServe([folder.dir, '--port', '0'], { env: NO_KEY });
    cleanups.push(() => agent.stop('SIGKILL'));
    const hash = hashText(echoProtocol());

    const wellknown = await (await fetch(`${agent.url}/wellknown`)).json();
    expect(wellknown).toEqual({ [hash]: [`${agent.url}/protocols/${hash}`] });
    const document = await fetch(`${agent.url}/protocols/${hash}`);
    expect(document.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await document.text()).toBe(echoProtocol());

    const reply = await fetch(`${agent.url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ protocolHash: hash, body: { message: 'hi' } }),
    });
    expect(await reply.json()).toEqual({ status: 'success', body: { echo: 'hi' } });
    const natural = await fetch(`${agent.url}/`, {
      method: 'POST',
      body: JSON.stringify({ protocolHash: null, body: 'hello?' }),
    });
    expect(await natural.json()).toEqual({
      status: 'failure',
      error: 'This agent only accepts queries under the protocols listed at /wellknown',
    });

    expect(agent.output()).toMatch(/broken\.md skipped: .*invalid front matter/);
    expect(await agent.stop('SIGTERM')).toBe(0);
    expect(agent.output()).toMatch(/2 queries \(1 routine, 0 LLM, 1 failed\)/);
  });

  it('caps documents from peers with --max-document / AGORA_MAX_DOCUMENT', async () => {
    const folder = await makeAgentFolder({});
    cleanups.push(folder.cleanup);
    const text = echoProtocol('Stranger', false, 'z'.repeat(300));
    const query = {
      protocolHash: hashText(text),
      protocolSources: [`data:text/plain,${encodeURIComponent(text)}`],
      body: {},
    };
    for (const [args, env] of [
      [['--max-document', '200'], NO_KEY],
      [[], { ...NO_KEY, AGORA_MAX_DOCUMENT: '200' }],
    ] as const) {
      const agent = await startServe([folder.dir, '--port', '0', ...args], { env });
      cleanups.push(() => agent.stop('SIGKILL'));
      const reply = await fetch(`${agent.url}/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(query),
      });
      expect(await reply.json()).toEqual({ status: 'failure', error: 'Unsupported protocol' });
      expect(agent.output()).toMatch(/larger than 200 bytes/);
      await agent.stop('SIGTERM');
    }
  });

  it('serves the root agent of this repository', async () => {
    const agent = await startServe(['.', '--port', '0'], { env: NO_KEY });
    cleanups.push(() => agent.stop('SIGKILL'));
    const wellknown = (await (await fetch(`${agent.url}/.wellknown`)).json()) as Record<string, string[]>;
    // Two protocols with routines; the third (no routine) needs the LLM, which is not configured here.
    expect(Object.keys(wellknown)).toHaveLength(2);
    // The banner says which document is present but not served, and why.
    expect(agent.output()).toMatch(
      /^agora: serving .*\(3 protocols, 2 routines, .*LLM: none\)\nagora: not served: protocols\/text-summary\.md \(no routines\/text-summary\.ts and no LLM: add the routine, or pick an LLM: --llm, ANTHROPIC_API_KEY, or --llm offline for a demo\)\nagora: listening on /m,
    );
    const code = await agent.stop();
    // The banner's next line: the dashboard, read-only on loopback without a token.
    expect(agent.output()).toContain(
      `agora: dashboard at ${agent.url}/dashboard/ (read-only: set --token to approve routines from it)\n`,
    );
    expect(code).toBe(0);
  });
});

/**
 * `agora serve` on a folder whose protocols/`heldBack` cannot be opened (EMFILE) while the returned gate file exists:
 * the first read of protocols/ is certainly under way until the test removes it. Resolves once the agent answers.
 */
async function serveHeldBack(files: Record<string, string>, heldBack: string) {
  const folder = await makeAgentFolder(files);
  cleanups.push(folder.cleanup);
  const gate = `${folder.dir}/gate`;
  await writeFile(gate, '');
  const env = withFaults({ AGORA_TEST_GATE: gate, AGORA_TEST_GATED_FILE: `${folder.dir}/protocols/${heldBack}` });
  const agent = await startServe([folder.dir, '--port', '0'], { env }, /answering meanwhile on (http:\/\/\S+)/);
  cleanups.push(() => agent.stop('SIGKILL'));
  return { agent, gate };
}

describe('agora serve while protocols/ loads', () => {
  it('answers /health before its banner, which says every protocol once they are read', async () => {
    const { agent, gate } = await serveHeldBack(
      {
        'protocols/a.md': echoProtocol('A'),
        'protocols/b.md': echoProtocol('B'),
        'protocols/late.md': echoProtocol('Late'),
      },
      'late.md',
    );
    const health = await fetch(`${agent.url}/health`);
    expect(await health.json()).toEqual({ status: 'ok', protocols: 'loading' });
    expect(agent.output()).not.toMatch(/serving|listening on/);
    await unlink(gate);
    await eventually(() => agent.output().includes('listening on'), 20_000);
    const output = agent.output();
    expect(output).toMatch(/^agora: serving .*\(3 protocols, 0 routines/m);
    expect(output.indexOf('agora: reading protocols/; answering meanwhile on')).toBeLessThan(
      output.indexOf('agora: serving'),
    );
    expect(await (await fetch(`${agent.url}/health`)).json()).toEqual({ status: 'ok' });
    expect(await agent.stop('SIGTERM')).toBe(0);
  });

  it('shuts down cleanly on SIGTERM while protocols/ is still read, with no banner', async () => {
    const { agent } = await serveHeldBack({ 'protocols/a.md': echoProtocol('A') }, 'a.md');
    expect(await (await fetch(`${agent.url}/health`)).json()).toEqual({ status: 'ok', protocols: 'loading' });
    expect(await agent.stop('SIGTERM')).toBe(0);
    expect(agent.output()).not.toMatch(/serving|listening on/);
    expect(agent.output()).toMatch(/SIGTERM: shutting down/);
  });

  it('finds a document its watcher missed with --rescan-interval, and refuses a negative interval', async () => {
    const folder = await makeAgentFolder({ 'protocols/a.md': echoProtocol('A') });
    cleanups.push(folder.cleanup);
    const agent = await startServe([folder.dir, '--port', '0', '--rescan-interval', '0.2'], {
      env: withFaults({ AGORA_TEST_BLIND_WATCH: '1' }),
    });
    cleanups.push(() => agent.stop('SIGKILL'));
    const hash = hashText(echoProtocol('Missed'));
    expect((await fetch(`${agent.url}/protocols/${hash}`)).status).toBe(404);
    await folder.write('protocols/missed.md', echoProtocol('Missed'));
    await eventually(async () => (await fetch(`${agent.url}/protocols/${hash}`)).status === 200, 20_000);
    await agent.stop('SIGTERM');
    const refused = await runCli(['serve', folder.dir, '--rescan-interval', '-1'], { env: NO_KEY });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe('agora serve: --rescan-interval must be a number of seconds of at least 0, got "-1"\n');
  });
});

describe('agora hash and validate', () => {
  it('prints the hash in hex and base64', async () => {
    const folder = await makeAgentFolder({ 'protocols/echo.md': echoProtocol() });
    cleanups.push(folder.cleanup);
    expect((await runCli(['hash', `${folder.dir}/protocols/echo.md`])).stdout.trim()).toBe(hashText(echoProtocol()));
    expect((await runCli(['hash', `${folder.dir}/protocols/echo.md`, '--encoding', 'base64'])).stdout.trim()).toBe(
      hashText(echoProtocol(), 'base64'),
    );
    const json = JSON.parse((await runCli(['hash', `${folder.dir}/protocols/echo.md`, '--json'])).stdout);
    expect(json).toMatchObject({ hex: hashText(echoProtocol()), name: 'Echo', valid: true });
    const bad = await runCli(['hash', `${folder.dir}/protocols/echo.md`, '--encoding', 'b32']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('validates a folder and exits non-zero when a document is invalid', async () => {
    const folder = await makeAgentFolder({
      'protocols/echo.md': echoProtocol(),
      'protocols/bad.md': '---\nname: x\n---\n',
    });
    cleanups.push(folder.cleanup);
    const result = await runCli(['validate', folder.dir]);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`ok       ${hashText(echoProtocol())}  echo.md`);
    expect(result.stdout).toMatch(/invalid  bad\.md: invalid metadata: ✖ description is missing\n  → at description/);
    const json = JSON.parse((await runCli(['validate', folder.dir, '--json'])).stdout);
    expect(json).toHaveLength(2);
    await folder.write('protocols/bad.md', echoProtocol('Fixed'));
    expect((await runCli(['validate', folder.dir])).code).toBe(0);
  });

  it('logs one JSON record per request with its fields, and the banner and summary as records, with --log-format json', async () => {
    const folder = await makeAgentFolder({});
    cleanups.push(folder.cleanup);
    const agent = await startServe([folder.dir, '--port', '0', '--log-format', 'json'], {
      env: { ...NO_KEY, AGORA_LOG_LEVEL: 'debug' },
    });
    cleanups.push(() => agent.stop('SIGKILL'));
    await fetch(`${agent.url}/health`);
    await agent.stop('SIGTERM');
    const entries = agent
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: string; msg: string });
    expect(entries).toContainEqual(
      expect.objectContaining({
        level: 'info',
        msg: expect.stringMatching(/^request \S+: GET \/health 200 [\d.]+ms$/),
        requestId: expect.any(String),
        method: 'GET',
        path: '/health',
        status: 200,
        ms: expect.any(Number),
      }),
    );
    expect(entries).toContainEqual(expect.objectContaining({ level: 'info', event: 'listening', url: agent.url }));
    expect(entries).toContainEqual(
      expect.objectContaining({ level: 'info', event: 'summary', llmCalls: 0, failedQueries: 0 }),
    );
    // In JSON nothing but records is written.
    expect(
      agent
        .output()
        .split('\n')
        .filter((line) => line && !line.startsWith('{')),
    ).toEqual([]);
    expect(entries).toContainEqual(expect.objectContaining({ level: 'info', msg: 'SIGTERM: shutting down' }));
  });

  it('logs the protocol and the path taken of each query, whole or streamed, and of a failure', async () => {
    const folder = await makeAgentFolder({
      'protocols/echo.md': echoProtocol(),
      'routines/echo.ts': 'export default (body: { message: string }) => ({ echo: body.message });',
    });
    cleanups.push(folder.cleanup);
    const agent = await startServe([folder.dir, '--port', '0', '--log-format', 'json'], { env: NO_KEY });
    cleanups.push(() => agent.stop('SIGKILL'));
    const hash = hashText(echoProtocol());
    const query = (accept: string, protocolHash = hash) =>
      fetch(agent.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept },
        body: JSON.stringify({ protocolHash, body: { message: 'hi' } }),
      });
    expect(await (await query('application/json')).json()).toEqual({ status: 'success', body: { echo: 'hi' } });
    const streamed = await (await query('text/event-stream')).text();
    expect(streamed).toContain('"echo":"hi"');
    await (await query('application/json', '0'.repeat(40))).text();
    await agent.stop('SIGTERM');
    const requests = agent
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((entry) => entry.method === 'POST');
    expect(requests).toEqual([
      expect.objectContaining({ path: '/', status: 200, protocol: hash, protocolName: 'Echo', taken: 'routine' }),
      expect.objectContaining({ path: '/', status: 200, protocol: hash, protocolName: 'Echo', taken: 'routine' }),
      expect.objectContaining({ path: '/', taken: 'failure' }),
    ]);
  });

  it('refuses an unknown log level or format with one line and exit 2', async () => {
    const level = await runCli(['serve', '.', '--log-level', 'loud'], { env: NO_KEY });
    expect(level.code).toBe(2);
    expect(level.stderr).toBe('agora serve: --log-level must be one of debug, info, warn, error, silent, got "loud"\n');
    const format = await runCli(['serve', '.', '--log-format', 'xml'], { env: NO_KEY });
    expect(format.code).toBe(2);
    expect(format.stderr).toMatch(/--log-format must be text or json/);
  });
});
