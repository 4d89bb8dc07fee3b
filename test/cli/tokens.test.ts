// Tokens from every client: `--token` / AGORA_TOKEN to agents, `--hub-token` / AGORA_HUB_TOKEN to hubs, and the
// Sender's `token` and `headers`. A recording server shows what each command sent; real servers show it is honoured.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent.js';
import { main } from '../../src/cli/main.js';
import { startHub, type RunningHub } from '../../src/hub/server.js';
import { silentLogger } from '../../src/log.js';
import { Sender } from '../../src/sender/sender.js';
import { captureOutput } from '../helpers/cli.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const cleanups: (() => Promise<void>)[] = [];
let agent: RunningAgent;
let open: RunningAgent;
let hub: RunningHub;
let recorder: { url: string; seen: { method: string; path: string; headers: IncomingHttpHeaders }[] };

beforeAll(async () => {
  open = await startAgent({
    dir: ROOT,
    port: 0,
    host: '127.0.0.1',
    llm: null,
    logger: silentLogger,
    watch: false,
    dashboard: false,
  });
  cleanups.push(() => open.close());
  agent = await startAgent({
    dir: ROOT,
    port: 0,
    host: '127.0.0.1',
    llm: null,
    logger: silentLogger,
    watch: false,
    tokens: ['agent-secret'],
    dashboard: false,
  });
  cleanups.push(() => agent.close());
  hub = await startHub({ port: 0, tickMs: 0, allowPrivateAgents: true, logger: silentLogger, tokens: ['hub-secret'] });
  cleanups.push(() => hub.close());
  const seen: typeof recorder.seen = [];
  const server: Server = createServer((request, response) => {
    seen.push({ method: request.method ?? '', path: request.url ?? '', headers: request.headers });
    request.resume();
    response.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"Unauthorized"}');
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  recorder = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
  cleanups.push(() => new Promise((done) => server.close(() => done())));
});
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllEnvs();
});

const UNIT = JSON.stringify({ value: 3, from: 'mi', to: 'km' });

describe('tokens to an agent', () => {
  it('agora send --token reaches an agent that requires it, and is refused without it', async () => {
    let output = captureOutput();
    expect(
      await main([
        'send',
        agent.url,
        UNIT,
        '--protocol',
        `${ROOT}protocols/unit-conversion.md`,
        '--token',
        'agent-secret',
      ]),
    ).toBe(0);
    expect(JSON.parse(output.stdout())).toMatchObject({ value: expect.any(Number) });
    vi.restoreAllMocks();
    output = captureOutput();
    expect(await main(['send', agent.url, UNIT, '--protocol', `${ROOT}protocols/unit-conversion.md`])).toBe(1);
    expect(output.stderr()).toMatch(
      /^agora send: .*401.*\n {2}a token is required: .*--token <token> or set AGORA_TOKEN\n$/,
    );
  });

  it('agora send reads AGORA_TOKEN', async () => {
    vi.stubEnv('AGORA_TOKEN', 'agent-secret');
    const output = captureOutput();
    expect(await main(['send', agent.url, UNIT, '--protocol', `${ROOT}protocols/unit-conversion.md`])).toBe(0);
    expect(JSON.parse(output.stdout())).toMatchObject({ value: expect.any(Number) });
  });

  it('agora check and agora wellknown send --token', async () => {
    recorder.seen.length = 0;
    captureOutput();
    await main(['check', recorder.url, '--token', 'check-secret', '--timeout', '5']);
    await main(['wellknown', recorder.url, '--token', 'check-secret']);
    expect(recorder.seen.length).toBeGreaterThan(1);
    for (const request of recorder.seen)
      expect(request.headers.authorization, `${request.method} ${request.path}`).toBe('Bearer check-secret');
  });

  it('the Sender sends its token and headers with every request, streamed ones too', async () => {
    recorder.seen.length = 0;
    const sender = new Sender({
      llm: null,
      logger: silentLogger,
      token: 'library-secret',
      headers: { 'X-Trace': 'trace-1' },
    });
    await expect(sender.query(recorder.url, { body: 'hello' })).rejects.toThrow(/401/);
    const stream = sender.stream(recorder.url, { body: 'hello' });
    await expect(stream.next()).rejects.toThrow(/401/);
    expect(recorder.seen).toHaveLength(2);
    for (const request of recorder.seen)
      expect(request.headers).toMatchObject({ authorization: 'Bearer library-secret', 'x-trace': 'trace-1' });
    // Past the guard, the agent (no LLM) answers natural language with the spec's failure, not a 401.
    await expect(
      new Sender({ llm: null, logger: silentLogger, token: 'agent-secret' }).query(agent.url, { body: 'hello' }),
    ).rejects.toThrow(`POST ${agent.url}/: failure: This agent only accepts`);
  });
});

describe('tokens to a hub', () => {
  it.each([
    ['route', ['route', 'weather in Paris']],
    ['chain', ['chain', 'weather in Paris']],
    ['runs', ['runs']],
    ['resume', ['resume', 'chain-1']],
    ['room', ['room', 'show', 'room-1']],
    ['hub register', ['hub', 'register', 'http://127.0.0.1:9/']],
  ])('agora %s sends --hub-token', async (_name, argv) => {
    recorder.seen.length = 0;
    const output = captureOutput();
    expect(await main([...argv, '--hub', recorder.url, '--hub-token', 'hub-secret'])).toBe(1);
    expect(recorder.seen.length).toBeGreaterThan(0);
    for (const request of recorder.seen) expect(request.headers.authorization).toBe('Bearer hub-secret');
    expect(output.stderr()).toMatch(
      /Unauthorized.*\n {2}a token is required: .*--hub-token <token> or set AGORA_HUB_TOKEN\n$/,
    );
  });

  it('agora runs reads AGORA_HUB_TOKEN', async () => {
    vi.stubEnv('AGORA_HUB_TOKEN', 'hub-secret');
    recorder.seen.length = 0;
    captureOutput();
    await main(['runs', '--hub', recorder.url]);
    expect(recorder.seen.map((request) => request.headers.authorization)).toEqual(['Bearer hub-secret']);
  });

  it('agora hub register registers with a hub that requires a token, and refuses a server option in its place', async () => {
    let output = captureOutput();
    expect(
      await main(['hub', 'register', open.url, '--hub', hub.url, '--hub-token', 'hub-secret', '--name', 'units']),
    ).toBe(0);
    expect(output.stdout()).toMatch(/^registered units .*: 2 protocols: /);
    vi.restoreAllMocks();
    output = captureOutput();
    expect(await main(['hub', 'register', open.url, '--hub', hub.url, '--token', 'hub-secret'])).toBe(2);
    expect(output.stderr()).toMatch(/--hub-token/);
  });
});
