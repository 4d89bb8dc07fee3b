// `agora check <url>` (src/conformance.ts): the conformance cases against our agent and the Python SDK emulation.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent.js';
import { main } from '../../src/cli/main.js';
import { checkAgent } from '../../src/conformance.js';
import { AnthropicModel } from '../../src/llm/anthropic/model.js';
import { silentLogger } from '../../src/log.js';
import { FakeAnthropic } from '../../src/testing/fake-anthropic.js';
import { echoProtocol, makeAgentFolder } from '../helpers/agent-folder.js';
import { endlessFetch } from '../helpers/endless-fetch.js';
import { startPythonPeer, type PythonPeer } from '../helpers/python-peer.js';

const ECHO_ROUTINE = 'export default (body: { message?: string }) => ({ echo: String(body.message ?? "") });\n';
const cleanups: (() => Promise<void>)[] = [];
let withLlm: RunningAgent;
let routinesOnly: RunningAgent;
let python: PythonPeer;

beforeAll(async () => {
  const fake = await FakeAnthropic.start({ fallback: 'Hello from the fake LLM.' });
  cleanups.push(() => fake.close());
  for (const [index, llm] of [
    new AnthropicModel({ baseURL: fake.url, apiKey: 'test', maxRetries: 0 }),
    null,
  ].entries()) {
    const folder = await makeAgentFolder({ 'protocols/echo.md': echoProtocol(), 'routines/echo.ts': ECHO_ROUTINE });
    const agent = await startAgent({
      dir: folder.dir,
      port: 0,
      host: '127.0.0.1',
      llm,
      logger: silentLogger,
      watch: false,
      routineThreshold: 0,
    });
    cleanups.push(folder.cleanup, () => agent.close());
    if (index === 0) withLlm = agent;
    else routinesOnly = agent;
  }
  python = await startPythonPeer();
  cleanups.push(() => python.close());
});
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

describe('checkAgent', () => {
  it('passes every case against our agent with an LLM', async () => {
    const results = await checkAgent(withLlm.url);
    expect(results.filter((result) => result.status !== 'pass')).toEqual([]);
    expect(results.length).toBeGreaterThanOrEqual(10);
  });

  it('passes against our agent without an LLM, skipping only what needs one', async () => {
    const results = await checkAgent(routinesOnly.url);
    expect(results.filter((result) => result.status === 'fail')).toEqual([]);
    expect(results.filter((result) => result.status === 'skip').map((result) => result.name)).toEqual([
      'a conversation: id, expiry, DELETE, then Conversation expired',
    ]);
  });

  it('holds the Python SDK emulation to its documented quirks, and passes it', async () => {
    const results = await checkAgent(python.url);
    expect(results.filter((result) => result.status === 'fail')).toEqual([]);
    expect(results[0]).toMatchObject({ status: 'skip', detail: expect.stringContaining('Python SDK') });
  });

  it('fails a case when the agent breaks the profile', async () => {
    // An agent that answers everything with HTTP 200 and an HTML page.
    const broken: typeof fetch = async () =>
      new Response('<h1>hi</h1>', { status: 200, headers: { 'content-type': 'text/html' } });
    const results = await checkAgent('http://127.0.0.1:9', { fetch: broken });
    expect(results.filter((result) => result.status === 'fail').length).toBeGreaterThanOrEqual(5);
    expect(results[0]).toMatchObject({ status: 'fail', detail: 'expected a JSON object, got undefined' });
  });

  it('reads at most 1 MiB of a reply: an agent answering without end fails its cases, and is never buffered whole', async () => {
    const endless = endlessFetch();
    const results = await checkAgent('http://127.0.0.1:9', { fetch: endless.fetch });
    expect(results[0]).toMatchObject({ status: 'fail', detail: expect.stringContaining('larger than 1048576 bytes') });
    expect(endless.pulled() / results.length).toBeLessThan(2 * 1024 * 1024);
  });
});

describe('agora check', () => {
  it('prints one line per case and a summary; exit 0 when all pass, 1 on any failure', async () => {
    let stdout = '';
    vi.spyOn(process.stdout, 'write').mockImplementation(
      (chunk: string | Uint8Array) => ((stdout += String(chunk)), true),
    );
    try {
      expect(await main(['check', withLlm.url])).toBe(0);
      expect(stdout).toMatch(/^ok    GET \/wellknown lists hash → sources: 1 protocol listed$/m);
      expect(stdout).toMatch(/\n\d+ cases passed, 0 failed, 0 skipped\n$/);
      stdout = '';
      // Nothing listens on a port just closed: one line saying so, not one per case.
      const closed = createServer();
      await new Promise<void>((listening) => closed.listen(0, '127.0.0.1', listening));
      const { port } = closed.address() as AddressInfo;
      await new Promise<void>((done) => closed.close(() => done()));
      let stderr = '';
      vi.spyOn(process.stderr, 'write').mockImplementation(
        (chunk: string | Uint8Array) => ((stderr += String(chunk)), true),
      );
      expect(await main(['check', `http://127.0.0.1:${port}`, '--timeout', '2'])).toBe(1);
      expect(stdout).toBe('');
      expect(stderr).toBe(
        `agora check: GET http://127.0.0.1:${port}/wellknown: connection refused\n` +
          `  is an agent running at http://127.0.0.1:${port}? Start one with \`agora serve\`\n`,
      );
      // A wrong path on a live agent is a 404 in JSON: said so, not taken for a Python SDK agent.
      expect(await main(['check', `${withLlm.url}/nope`, '--timeout', '2'])).toBe(1);
      expect(stdout).toMatch(/^FAIL  GET \/wellknown lists hash → sources: HTTP 404: no Agora agent at .*\/nope/m);
      expect(stdout).not.toMatch(/Python/);
    } finally {
      vi.restoreAllMocks();
    }
  });
});
