import { mkdtemp, readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startAgent, type RunningAgent } from '../src/agent.js';
import { AnthropicModel } from '../src/llm/anthropic/model.js';
import { silentLogger } from '../src/log.js';
import {
  extractFinalProtocol,
  negotiateProtocol,
  normaliseNegotiatedDocument,
  writeProtocolFile,
} from '../src/negotiation.js';
import { hashText, parseDocument } from '../src/protocol/document.js';
import { Sender } from '../src/sender/sender.js';
import { FakeAnthropic, type FakeReply, type FakeRequest } from '../src/testing/fake-anthropic.js';
import { cleanupStack, DISTANCE, failureOf, km, recordingFetch, type Call } from './helpers/sender.js';

// What the sender's LLM finally writes: beginner layout, no blank line, spaces around. Normalised before use.
const AGREED = [
  'name: Distance conversion',
  'description: Convert a distance in miles to kilometres.',
  'multiround: false',
  '---',
  'The sender sends JSON {"miles": number}.',
  'The receiver replies JSON {"km": number}, rounded to 3 decimals.',
].join('\n');
const PROPOSAL = `Here is my proposal:\n---\nname: Distance conversion\ndescription: Miles to km.\nmultiround: false\n---\nThe sender sends JSON {"miles": number}. The receiver replies JSON {"km": number}.`;

const Convert = {
  name: 'Convert miles',
  description: 'Convert a distance in miles to kilometres.',
  input: z.object({ miles: z.number() }),
  output: z.object({ km: z.number() }),
};

const cleanup = cleanupStack();

afterAll(() => cleanup.run());

// The receiving agent's LLM: asks for one change, then accepts; judges PDs suitable; answers under them.
function receiverBrain(request: FakeRequest): FakeReply {
  const system = request.system;
  if (system.includes('negotiates a protocol document (PD) with you')) {
    return request.body.messages.length === 1
      ? 'Please round km to 3 decimals and name the PD "Distance conversion".'
      : 'I accept this protocol.';
  }
  if (system.includes('Decide whether you can honour it')) return 'I can convert units.\nYES';
  if (system.includes('queries you under this protocol document'))
    return JSON.stringify({ km: km(JSON.parse(request.lastUserText).miles) });
  if (system.includes('in natural language')) return `${km(Number(/\d+/.exec(request.lastUserText)?.[0]))} km.`;
  return { status: 500 };
}

// The sending agent's LLM: proposes, revises, then emits the final document.
function senderBrain(final: string) {
  return (request: FakeRequest): FakeReply => {
    const system = request.system;
    const input = /Input \(JSON\): (.*)/.exec(request.lastUserText)?.[1];
    if (system.includes('You negotiate a protocol document')) {
      const turns = request.body.messages.length;
      if (turns === 1) return PROPOSAL;
      if (turns === 3) return `Revised, with 3 decimals:\n${DISTANCE}`;
      return `<FINALPROTOCOL>\n  ${final}  \n</FINALPROTOCOL>`;
    }
    if (system.includes('one message in natural language')) return `How many km are ${JSON.parse(input!).miles} miles?`;
    if (system.includes('Write the body of the query')) return JSON.stringify({ miles: JSON.parse(input!).miles });
    if (system.includes('turn its reply into the JSON value'))
      return JSON.stringify({ km: Number(/([\d.]+)/.exec(request.lastUserText.split('replied:\n')[1] ?? '')?.[1]) });
    return { status: 500 };
  };
}

type Pair = {
  peer: RunningAgent;
  peerFake: FakeAnthropic;
  senderFake: FakeAnthropic;
  dir: string;
  sender: Sender;
  calls: Call[];
};

async function pair(final = AGREED): Promise<Pair> {
  const peerFake = await FakeAnthropic.start({ fallback: receiverBrain });
  const senderFake = await FakeAnthropic.start({ fallback: senderBrain(final) });
  cleanup.push(
    () => peerFake.close(),
    () => senderFake.close(),
  );
  const peer = await startAgent({
    dir: await cleanup.tempDir('agora-peer-'),
    port: 0,
    host: '127.0.0.1',
    llm: new AnthropicModel({ baseURL: peerFake.url, apiKey: 'test', maxRetries: 0 }),
    logger: silentLogger,
    watch: false,
  });
  cleanup.push(() => peer.close());
  const dir = await cleanup.tempDir('agora-sender-');
  const { calls, fetch } = recordingFetch();
  const sender = new Sender({
    llm: new AnthropicModel({ baseURL: senderFake.url, apiKey: 'test', maxRetries: 0 }),
    dir,
    logger: silentLogger,
    thresholds: { lookForProtocolFrom: 1, negotiateFrom: 1 },
    fetch,
  });
  return { peer, peerFake, senderFake, dir, sender, calls };
}

describe('negotiation between two of our agents', () => {
  let agents: Pair;

  beforeAll(async () => {
    agents = await pair();
  });

  it('negotiates a protocol for a task, writes it, and both sides then use it', async () => {
    const { peer, sender, dir, calls, senderFake, peerFake } = agents;
    const convert = sender.task(Convert);
    expect(await convert({ miles: 5 }, { target: peer.url })).toEqual({ km: 8.047 });

    const hash = hashText(DISTANCE);
    const state = await sender.taskState('Convert miles', peer.url);
    expect(state).toMatchObject({
      uses: 1,
      protocolHash: hash,
      verdicts: { [hash]: true },
      negotiation: { outcome: 'agreed', hash, rounds: 2 },
    });
    const path = join(dir, 'protocols', 'distance-conversion.md');
    expect(state.negotiation).toMatchObject({ path });
    expect(await readFile(path, 'utf8')).toBe(DISTANCE);

    // On the wire: a "negotiation" conversation (opened, continued, closed), then the query under the new hash.
    const id = calls
      .find((call) => call.method === 'DELETE')
      ?.url.split('/')
      .pop();
    expect(calls.map((call) => `${call.method} ${call.url.replace(peer.url, '')}`)).toEqual([
      'GET /wellknown',
      'POST /',
      `POST /conversations/${id}`,
      `DELETE /conversations/${id}`,
      'POST /',
    ]);
    expect(calls[1]!.json).toEqual({
      protocolHash: 'negotiation',
      protocolSources: [],
      body: PROPOSAL,
      multiround: true,
    });
    expect(calls[2]!.json).toMatchObject({
      protocolHash: 'negotiation',
      body: `Revised, with 3 decimals:\n${DISTANCE.trim()}`,
    });
    expect(calls[4]!.json).toMatchObject({ protocolHash: hash, body: { miles: 5 } });

    // The peer's LLM saw the whole negotiation; the peer stored the PD when the query brought it.
    const negotiating = peerFake.requests.filter((request) =>
      request.system.includes('negotiates a protocol document'),
    );
    expect(negotiating).toHaveLength(2);
    expect(negotiating[1]!.body.messages).toHaveLength(3);
    expect(await peer.receiver.memory.get(`documents/${hash}`)).toMatchObject({
      text: DISTANCE,
      name: 'Distance conversion',
    });
    expect(Object.keys(await peer.receiver.wellknown())).toEqual([hash]);

    // The second use goes straight to the protocol: no negotiation, no judging.
    senderFake.reset();
    expect(await convert({ miles: 10 }, { target: peer.url })).toEqual({ km: 16.093 });
    expect(
      senderFake.requests.map((request) =>
        request.system.includes('Write the body')
          ? 'write-body'
          : request.system.includes('turn its reply')
            ? 'read'
            : 'other',
      ),
    ).toEqual(['write-body', 'read']);
    expect(await readdir(join(dir, 'protocols'))).toEqual(['distance-conversion.md']);
  });

  it('negotiates directly, reporting each round, and reuses an identical file', async () => {
    const { peer, sender, dir } = agents;
    const rounds: [number, string, string][] = [];
    const result = await sender.negotiate(
      peer.url,
      { name: 'Distance', description: 'miles to km' },
      { onRound: (...round) => void rounds.push(round) },
    );
    expect(result.document.text).toBe(DISTANCE);
    expect(result.path).toBe(join(dir, 'protocols', 'distance-conversion.md'));
    expect(rounds.map(([round, , answer]) => [round, answer])).toEqual([
      [1, 'Please round km to 3 decimals and name the PD "Distance conversion".'],
      [2, 'I accept this protocol.'],
    ]);
    expect(result.transcript.map((message) => message.role)).toEqual([
      'sender',
      'receiver',
      'sender',
      'receiver',
      'sender',
    ]);
  });
});

describe('negotiations that fail', () => {
  it('gives up after 10 rounds without agreement, writing nothing and closing the conversation', async () => {
    const agents = await pair();
    agents.senderFake.setFallback((request) => (request.system.includes('You negotiate') ? PROPOSAL : { status: 500 }));
    agents.peerFake.setFallback((request) =>
      request.system.includes('negotiates a protocol') ? 'I cannot accept; change the field names.' : { status: 500 },
    );
    const error = await failureOf(
      agents.sender.negotiate(agents.peer.url, { name: 'Distance', description: 'miles to km' }),
    );
    expect(error).toMatchObject({ code: 'NEGOTIATION_FAILED', message: 'no agreement after 10 rounds' });
    expect(agents.senderFake.requests).toHaveLength(11);
    expect(agents.peerFake.requests).toHaveLength(10);
    expect(agents.calls.at(-1)!.method).toBe('DELETE');
    await expect(readdir(join(agents.dir, 'protocols'))).rejects.toThrow(/ENOENT/);
  });

  it('refuses an invalid final document, writing nothing; the task goes on in natural language', async () => {
    const agents = await pair(
      '---\nname: Distance conversion\ndescription: Miles to km.\n---\nThe sender sends JSON {"miles": number}.',
    );
    const error = await failureOf(
      agents.sender.negotiate(agents.peer.url, { name: 'Distance', description: 'miles to km' }),
    );
    expect(error.code).toBe('NEGOTIATION_FAILED');
    expect(error.message).toBe(
      'the negotiated document is invalid: invalid metadata: ✖ multiround is missing (true or false required)\n  → at multiround',
    );
    await expect(readdir(join(agents.dir, 'protocols'))).rejects.toThrow(/ENOENT/);

    expect(await agents.sender.task(Convert)({ miles: 2 }, { target: agents.peer.url })).toEqual({ km: 3.219 });
    const state = await agents.sender.taskState('Convert miles', agents.peer.url);
    expect(state).toMatchObject({
      uses: 1,
      protocolHash: null,
      negotiation: { outcome: 'failed', error: error.message },
    });
    await expect(readdir(join(agents.dir, 'protocols'))).rejects.toThrow(/ENOENT/);
  });
});

describe('negotiation helpers', () => {
  let dir: string;

  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('reads the final document between the markers, whitespace and fences stripped', () => {
    expect(extractFinalProtocol(`Agreed.\n<FINALPROTOCOL>\n\n ${AGREED} \n</FINALPROTOCOL>`)).toBe(AGREED);
    expect(extractFinalProtocol(`<FINALPROTOCOL>\n\`\`\`markdown\n${DISTANCE}\`\`\`\n</FINALPROTOCOL>`)).toBe(
      DISTANCE.trim(),
    );
    expect(extractFinalProtocol('no markers here')).toBeUndefined();
    expect(normaliseNegotiatedDocument(AGREED).text).toBe(DISTANCE);
  });

  it('runs on any transport: one send per round, then the final document', async () => {
    const fake = await FakeAnthropic.start({ replies: [PROPOSAL, `<FINALPROTOCOL>${DISTANCE}</FINALPROTOCOL>`] });
    cleanup.push(() => fake.close());
    const sent: string[] = [];
    const usage: number[] = [];
    const result = await negotiateProtocol({
      llm: new AnthropicModel({ baseURL: fake.url, apiKey: 'test', maxRetries: 0 }),
      task: {
        name: 'Distance',
        description: 'miles to km',
        inputSchema: z.toJSONSchema(Convert.input) as Record<string, unknown>,
      },
      send: async (message) => {
        sent.push(message);
        return 'Accepted.';
      },
      onUsage: (call) => void usage.push(call.outputTokens),
    });
    expect(sent).toEqual([PROPOSAL]);
    expect(result).toMatchObject({ rounds: 1, document: { hash: hashText(DISTANCE) } });
    expect(usage).toEqual([5, 5]);
    expect(fake.requests[0]!.system).toContain('"miles"');
    expect(fake.requests[1]!.lastUserText).toBe('The other agent answers:\nAccepted.');
  });

  it('writes a protocol file without overwriting another, reusing an identical one', async () => {
    dir = await mkdtemp(join(tmpdir(), 'agora-write-'));
    const document = parseDocument(DISTANCE);
    const path = await writeProtocolFile(dir, document);
    expect(path).toBe(join(dir, 'protocols', 'distance-conversion.md'));
    expect(await writeProtocolFile(dir, document)).toBe(path);
    const other = parseDocument(DISTANCE.replace('3 decimals', '2 decimals'));
    expect(await writeProtocolFile(dir, other)).toBe(join(dir, 'protocols', 'distance-conversion-2.md'));
    await mkdir(join(dir, 'protocols'), { recursive: true });
    await writeFile(join(dir, 'protocols', 'distance-conversion-3.md'), 'taken');
    const third = parseDocument(DISTANCE.replace('3 decimals', '4 decimals'));
    expect(await writeProtocolFile(dir, third)).toBe(join(dir, 'protocols', 'distance-conversion-4.md'));
    expect(await readFile(join(dir, 'protocols', 'distance-conversion-2.md'), 'utf8')).toBe(other.text);
    expect((await readdir(join(dir, 'protocols'))).sort()).toEqual([
      'distance-conversion-2.md',
      'distance-conversion-3.md',
      'distance-conversion-4.md',
      'distance-conversion.md',
    ]);
  });
});
