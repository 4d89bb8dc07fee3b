// src/sender/python.ts and its use: bodies as a Python SDK 0.2.0 peer reads and writes them (spec §7).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { AnthropicModel } from '../../src/llm/anthropic/model.js';
import { chooseModel } from '../../src/llm/choose.js';
import { parsedReply, textBody } from '../../src/sender/python.js';
import { Sender } from '../../src/sender/sender.js';
import { FakeAnthropic } from '../../src/testing/fake-anthropic.js';
import { silentLogger } from '../../src/log.js';
import { pythonDataUri, pythonHash } from '../helpers/python-peer.js';
import { DISTANCE, DISTANCE_HEX, recordingFetch, senderBrain, senderSuite } from '../helpers/sender.js';

const { cleanup, sender, peers } = senderSuite({ python: true });

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('textBody and parsedReply', () => {
  it('sends a string as it is and any other JSON value as its JSON text', () => {
    expect(textBody('hello')).toBe('hello');
    expect(textBody({ miles: 2, tags: ['a'] })).toBe('{"miles":2,"tags":["a"]}');
    expect(textBody(3)).toBe('3');
    expect(textBody(null)).toBe('null');
  });

  it('reads back JSON text of an object or array, fenced or not; other text stays text', () => {
    expect(parsedReply('{"km": 3.219}')).toEqual({ km: 3.219 });
    expect(parsedReply(' [1, 2] \n')).toEqual([1, 2]);
    expect(parsedReply('```json\n{"km": 1}\n```')).toEqual({ km: 1 });
    expect(parsedReply('42')).toBe('42');
    expect(parsedReply('sunny')).toBe('sunny');
    expect(parsedReply('{not json')).toBe('{not json');
    expect(parsedReply({ km: 1 })).toEqual({ km: 1 });
  });
});

describe('a Python-like peer (no /wellknown)', () => {
  it("gets a protocol query's body as JSON text and its JSON text reply is read back", async () => {
    const reply = await sender().query(peers.python.url, { protocol: DISTANCE, body: { miles: 2 } });
    expect(reply).toEqual({ body: { km: 3.219 } });
    const post = peers.python.requests.find((request) => request.method === 'POST')!;
    expect(post.json).toEqual({
      protocolHash: pythonHash(DISTANCE),
      protocolSources: [expect.stringMatching(/^data:/)],
      body: '{"miles":2}',
    });
  });

  it('gets natural language as it is', async () => {
    expect(await sender().query(peers.python.url, { body: 'hello' })).toEqual({ body: 'turn 1: hello' });
    expect(peers.python.requests.at(-1)!.json.body).toBe('hello');
  });

  it('fails as the Python SDK does when a JSON object reaches it under a protocol (what this module prevents)', async () => {
    const raw = await fetch(`${peers.python.url}/`, {
      method: 'POST',
      body: JSON.stringify({
        protocolHash: pythonHash(DISTANCE),
        protocolSources: [pythonDataUri(DISTANCE)],
        body: { miles: 2 },
      }),
    });
    expect(await raw.json()).toEqual({ status: 'error', message: "unhashable type: 'slice'" });
  });

  it('gives a typed task its output from a JSON text reply, through the sender routine, with no LLM read', async () => {
    const fake = await FakeAnthropic.start({ fallback: senderBrain });
    cleanup.push(() => fake.close());
    const dir = await cleanup.tempDir('agora-python-task-');
    await mkdir(join(dir, 'protocols'));
    await writeFile(join(dir, 'protocols', 'distance.md'), DISTANCE);
    const client = sender({
      llm: new AnthropicModel({ baseURL: fake.url, apiKey: 'test', maxRetries: 0 }),
      dir,
      thresholds: { lookForProtocolFrom: 1, negotiateFrom: 5 },
      extensions: {
        taskRoutine: async (_task, document) =>
          document.hash === DISTANCE_HEX
            ? { buildBody: (input) => ({ miles: (input as { miles: number }).miles }), parseReply: (body) => body }
            : undefined,
      },
    });
    const convert = client.task({
      name: 'Convert miles',
      description: 'Miles to km.',
      input: z.object({ miles: z.number() }),
      output: z.object({ km: z.number() }),
    });
    expect(await convert({ miles: 5 }, { target: peers.python.url })).toEqual({ km: 8.047 });
    // The LLM judged the document once; it never had to read the reply.
    expect(fake.requests.map((request) => request.system.includes('You decide'))).toEqual([true]);
  });
});

describe('a peer with /wellknown', () => {
  it('gets JSON bodies as JSON', async () => {
    const recording = recordingFetch();
    expect(
      await sender({ fetch: recording.fetch }).query(peers.agent.url, { protocol: DISTANCE, body: { miles: 2 } }),
    ).toEqual({ body: { km: 3.219 } });
    expect(recording.calls.at(-1)!.json.body).toEqual({ miles: 2 });
  });
});

describe('the exact URL', () => {
  it('posts a query to the URL as given, with no slash added, so a Python error text comes back as the peer wrote it', async () => {
    const recording = recordingFetch();
    const client = sender({ fetch: recording.fetch });
    const error = await client
      .query(`${peers.python.url}/conversations/nope`, { body: 'hi' })
      .catch((caught: unknown) => caught);
    expect(recording.calls.at(-1)!.url).toBe(`${peers.python.url}/conversations/nope`);
    expect(error).toMatchObject({
      code: 'PEER_FAILURE',
      message: `POST ${peers.python.url}/conversations/nope: failure: Conversation not found.`,
    });
    await client.query(peers.agent.url, { body: 'hi' }).catch(() => undefined);
    expect(recording.calls.at(-1)!.url).toBe(`${peers.agent.url}/`);
  });
});

describe('Sender and its LLM', () => {
  it('uses no LLM unless given one, even with ANTHROPIC_API_KEY set', () => {
    vi.stubEnv('ANTHROPIC_API_KEY', 'sk-ant-test');
    expect(new Sender({ logger: silentLogger }).llm).toBeUndefined();
    expect(new Sender({ logger: silentLogger, llm: null }).llm).toBeUndefined();
  });

  it('runs a task that needs an LLM with the model chosen from an environment', async () => {
    const fake = await FakeAnthropic.start({ fallback: senderBrain });
    cleanup.push(() => fake.close());
    const llm = chooseModel({}, { ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: fake.url });
    const convert = new Sender({ logger: silentLogger, llm }).task({
      name: 'Convert miles',
      description: 'Miles to km.',
      input: z.object({ miles: z.number() }),
      output: z.object({ km: z.number() }),
    });
    expect(await convert({ miles: 5 }, { target: peers.agent.url })).toEqual({ km: 8.047 });
    expect(fake.requests.length).toBeGreaterThan(0);
  });
});
