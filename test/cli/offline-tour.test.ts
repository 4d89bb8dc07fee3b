// The offline tour without a key: natural language, a negotiation between two agents, a routine written by the
// (offline) LLM, its checks, its approval, and the cost falling, with the request log as JSON records.
import { readFile } from 'node:fs/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent.js';
import { main } from '../../src/cli/main.js';
import { AgoraError } from '../../src/errors.js';
import type { LanguageModel } from '../../src/llm/model.js';
import { OfflineModel } from '../../src/llm/offline.js';
import { consoleLogger, silentLogger } from '../../src/log.js';
import { Sender } from '../../src/sender/sender.js';
import { echoProtocol, makeAgentFolder } from '../helpers/agent-folder.js';

type LogRecord = Record<string, unknown> & { msg: string; level: string };
const cleanups: (() => Promise<void>)[] = [];
const records: LogRecord[] = [];
let agent: RunningAgent;
let agentDir: string;
let senderDir: string;

beforeAll(async () => {
  const receiverFolder = await makeAgentFolder({});
  const senderFolder = await makeAgentFolder({});
  agentDir = receiverFolder.dir;
  senderDir = senderFolder.dir;
  cleanups.push(receiverFolder.cleanup, senderFolder.cleanup);
  const logger = consoleLogger('agora', {
    format: 'json',
    write: (line) => void records.push(JSON.parse(line) as LogRecord),
  });
  agent = await startAgent({
    dir: agentDir,
    port: 0,
    host: '127.0.0.1',
    llm: new OfflineModel(),
    logger,
    watch: false,
    routineThreshold: 3,
    requestLog: true,
    dashboard: false,
  });
  cleanups.push(() => agent.close());
});
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});
afterEach(() => vi.restoreAllMocks());

describe('the offline tour', () => {
  it('answers natural language, labelled as the demo it is', async () => {
    const sender = new Sender({ llm: null, logger: silentLogger });
    const { body } = await sender.query(agent.url, { body: 'Hello' });
    expect(body).toMatch(/^\(offline demo model\) You said: "Hello"/);
    const record = records.find((entry) => entry.msg.startsWith('request ') && entry.taken === 'llm');
    expect(record).toMatchObject({
      method: 'POST',
      path: '/',
      status: 200,
      taken: 'llm',
      protocolName: 'natural_language',
      requestId: expect.any(String),
      ms: expect.any(Number),
    });
  });

  it('negotiates, serves with the LLM, writes a checked routine, and answers with it once approved', async () => {
    const sender = new Sender({ llm: new OfflineModel(), dir: senderDir, logger: silentLogger });
    const { document, rounds } = await sender.negotiate(agent.url, {
      name: 'Short summary',
      description: 'Shorten a text to a few words.',
    });
    expect(rounds).toBe(1);
    expect(document.text).toContain('"maxWords": integer');
    for (let index = 1; index <= 3; index++) {
      const { body } = await sender.query(agent.url, {
        protocol: document,
        body: { text: `one two three four ${index}`, maxWords: 2 },
      });
      expect(body).toEqual({ summary: 'one two' });
    }
    await agent.generator!.idle();
    const written = records.find((entry) => /routine written to routines\/generated\//.test(entry.msg));
    expect(written?.msg).toMatch(/review it, then: agora routines approve /);
    expect(records.some((entry) => /type-checked in \d+ ms, running its checks/.test(entry.msg))).toBe(true);

    let stdout = '';
    vi.spyOn(process.stdout, 'write').mockImplementation(
      (chunk: string | Uint8Array) => ((stdout += String(chunk)), true),
    );
    expect(await main(['routines', 'approve', document.hash.slice(0, 8), agentDir])).toBe(0);
    expect(stdout).toMatch(/^approved /);
    vi.restoreAllMocks();

    const before = agent.receiver.counters.snapshot();
    const { body } = await sender.query(agent.url, {
      protocol: document,
      body: { text: 'alpha beta gamma', maxWords: 1 },
    });
    expect(body).toEqual({ summary: 'alpha' });
    const after = agent.receiver.counters.snapshot();
    // The cost falls: the turn took the routine, with no LLM call.
    expect(after.queries.routine).toBe(before.queries.routine + 1);
    expect(after.llmCalls).toBe(before.llmCalls);
    expect(records.at(-1)).toMatchObject({ status: 200, taken: 'routine', protocol: document.hash });
    expect(records.some((entry) => /routine approved/.test(entry.msg))).toBe(true);
    const code = await readFile(`${agentDir}/${/routine written to (\S+\.ts)/.exec(written!.msg)![1]}`, 'utf8');
    expect(code).toContain('Written by the offline demo model');
  });
});

describe('a failing LLM on the suitability path', () => {
  it('answers the peer "LLM unavailable" and logs the cause once', async () => {
    const failing: LanguageModel = {
      model: 'broken',
      provider: 'test',
      complete: () =>
        Promise.reject(
          new AgoraError('LLM_UNAVAILABLE', 'LLM unavailable', { cause: new Error('upstream 529: overloaded') }),
        ),
    };
    const lines: string[] = [];
    const folder = await makeAgentFolder({});
    cleanups.push(folder.cleanup);
    const broken = await startAgent({
      dir: folder.dir,
      port: 0,
      host: '127.0.0.1',
      llm: failing,
      logger: consoleLogger('agora', { write: (line) => void lines.push(line) }),
      watch: false,
      dashboard: false,
    });
    cleanups.push(() => broken.close());
    const sender = new Sender({ llm: null, logger: silentLogger });
    await expect(
      sender.query(broken.url, { protocol: echoProtocol('Learned'), body: { message: 'hi' } }),
    ).rejects.toThrow(/failure: LLM unavailable/);
    const logged = lines.filter((line) => line.includes('suitability not judged'));
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(
      /error protocol "Learned" [0-9a-f]{40}: suitability not judged: .*upstream 529: overloaded/,
    );
  });
});
