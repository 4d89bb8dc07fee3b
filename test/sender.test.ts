import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createHandler, startServer } from '../src/http/handler.js';
import { AnthropicModel } from '../src/llm/anthropic.js';
import { silentLogger } from '../src/log.js';
import { encodeHash, hashText } from '../src/protocol/document.js';
import { encodeDataUri } from '../src/protocol/sources.js';
import { Receiver } from '../src/receiver.js';
import { Sender, type SenderOptions } from '../src/sender/sender.js';
import type { TaskServedEvent } from '../src/sender/tasks.js';
import { FakeAnthropic, type FakeReply, type FakeRequest } from '../src/testing/fake-anthropic.js';
import { cleanupStack, DISTANCE, failureOf, km, recordingFetch } from './helpers/sender.js';
import { pythonDataUri, pythonHash, pythonSend, startPythonPeer, type PythonPeer } from './helpers/python-peer.js';

const DISTANCE_HEX = hashText(DISTANCE);
const DISTANCE_ROUTINE = 'export default (body: { miles: number }) => ({ km: Math.round(body.miles * 1609.344) / 1000 });\n';
const NOT_SERVED = '---\nname: Horoscope\ndescription: Tomorrow for a sign.\nmultiround: false\n---\n\nThe sender sends JSON {"sign": string}.\n';
const NL_ONLY = 'This agent only accepts queries under the protocols listed at /wellknown';

const firstNumber = (text: string) => Number(/(\d+(?:\.\d+)?)/.exec(text)?.[1] ?? Number.NaN);

// The peer's LLM: answers natural language about miles; later turns are echoed.
function receiverBrain(request: FakeRequest): FakeReply {
  if (request.body.messages.length > 1) return `You said: ${request.lastUserText}`;
  return `${firstNumber(request.lastUserText)} miles is ${km(firstNumber(request.lastUserText))} km.`;
}

// Our sender's LLM, steered by which step's prompt it gets.
function senderBrain(request: FakeRequest): FakeReply {
  const input = /Input \(JSON\): (.*)/.exec(request.lastUserText)?.[1];
  if (request.system.includes('one message in natural language')) return `How many kilometres are ${JSON.parse(input!).miles} miles?`;
  if (request.system.includes('You decide whether a protocol document')) return 'It converts miles to kilometres.\nYES';
  if (request.system.includes('Write the body of the query')) return JSON.stringify({ miles: JSON.parse(input!).miles });
  if (request.system.includes('turn its reply into the JSON value')) {
    const reply = request.lastUserText.split('The other agent replied:\n')[1] ?? '';
    const value = /"km":\s*([\d.]+)/.exec(reply)?.[1] ?? /([\d.]+) km/.exec(reply)?.[1];
    return JSON.stringify({ km: Number(value) });
  }
  return { status: 500 };
}

type Started = { url: string; dir: string; receiver: Receiver; close(): Promise<void> };
const cleanup = cleanupStack();

async function startReceiver(options: { llm?: boolean; protocols?: boolean } = {}): Promise<Started> {
  const dir = await cleanup.tempDir('agora-receiver-');
  if (options.protocols !== false) {
    await mkdir(join(dir, 'protocols'));
    await mkdir(join(dir, 'routines'));
    await writeFile(join(dir, 'protocols', 'distance.md'), DISTANCE);
    await writeFile(join(dir, 'routines', 'distance.ts'), DISTANCE_ROUTINE);
  }
  let llm: AnthropicModel | undefined;
  if (options.llm !== false) {
    const fake = await FakeAnthropic.start({ fallback: receiverBrain });
    cleanup.push(() => fake.close());
    llm = new AnthropicModel({ baseURL: fake.url, apiKey: 'test', maxRetries: 0 });
  }
  const receiver = await Receiver.start({ dir, watch: false, logger: silentLogger, ...(llm ? { llm } : {}) });
  const server = await startServer(receiver, { port: 0, host: '127.0.0.1', logger: silentLogger });
  const close = async () => {
    await server.close();
    await receiver.close();
  };
  cleanup.push(close);
  return { url: server.url, dir, receiver, close };
}


async function rawServer(handler: (request: IncomingMessage, respond: (status: number, type: string, body: string) => void) => void): Promise<{ url: string; server: Server }> {
  const server = createServer((request, response) => {
    handler(request, (status, type, body) => response.writeHead(status, { 'content-type': type }).end(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}


function sender(options: SenderOptions = {}): Sender {
  return new Sender({ logger: silentLogger, ...options });
}

let agent: Started;
let routinesOnly: Started;

beforeAll(async () => {
  [agent, routinesOnly] = await Promise.all([startReceiver(), startReceiver({ llm: false })]);
});

afterAll(() => cleanup.run());

describe('queries against our receiver', () => {
  it('reads /wellknown once, then sends a hex hash with a data: source', async () => {
    const { calls, fetch } = recordingFetch();
    const client = sender({ fetch });
    expect(await client.query(agent.url, { protocol: DISTANCE, body: { miles: 5 } })).toEqual({ body: { km: 8.047 } });
    expect(await client.query(agent.url, { protocol: DISTANCE, body: { miles: 10 } })).toEqual({ body: { km: 16.093 } });
    expect(calls.map((call) => `${call.method} ${call.url}`)).toEqual([`GET ${agent.url}/wellknown`, `POST ${agent.url}/`, `POST ${agent.url}/`]);
    expect(calls[1]!.json).toEqual({ protocolHash: DISTANCE_HEX, protocolSources: [encodeDataUri(DISTANCE)], body: { miles: 5 } });
  });

  it('adds its own /protocols/:hash URL to the sources when it runs a receiver', async () => {
    const { calls, fetch } = recordingFetch();
    await sender({ fetch, publicUrl: 'https://me.example/agora/' }).query(agent.url, { protocol: DISTANCE, body: { miles: 1 } });
    expect(calls[1]!.json.protocolSources).toEqual([encodeDataUri(DISTANCE), `https://me.example/agora/protocols/${DISTANCE_HEX}`]);
  });

  it('sends natural language with a null hash and no sources, without discovery', async () => {
    const { calls, fetch } = recordingFetch();
    const reply = await sender({ fetch }).query(agent.url, { body: 'How far is 3 miles in km?' });
    expect(reply).toEqual({ body: '3 miles is 4.828 km.' });
    expect(calls).toEqual([{ method: 'POST', url: `${agent.url}/`, json: { protocolHash: null, protocolSources: [], body: 'How far is 3 miles in km?' } }]);
  });

  it('holds a conversation, then closes it with one DELETE however often close is called', async () => {
    const { calls, fetch } = recordingFetch();
    const conversation = sender({ fetch }).conversation(agent.url);
    expect(conversation.id).toBeUndefined();
    const first = await conversation.send('What is 2 miles in km?');
    expect(first.body).toBe('2 miles is 3.219 km.');
    expect(first.conversationId).toMatch(/^[A-Za-z0-9_-]{21,}$/);
    expect(Number.isInteger(first.conversationExpires)).toBe(true);
    const second = await conversation.send('Thanks');
    expect(second).toMatchObject({ body: 'You said: Thanks', conversationId: first.conversationId });
    await conversation.close();
    await conversation.close();
    const id = first.conversationId!;
    expect(calls.map((call) => `${call.method} ${call.url}`)).toEqual([
      `POST ${agent.url}/`,
      `POST ${agent.url}/conversations/${id}`,
      `DELETE ${agent.url}/conversations/${id}`,
    ]);
    expect(calls[0]!.json).toEqual({ protocolHash: null, protocolSources: [], body: 'What is 2 miles in km?', multiround: true });
    expect(calls[1]!.json).toEqual({ protocolHash: null, protocolSources: [], body: 'Thanks' });
    const gone = await fetch(`${agent.url}/conversations/${id}`, { method: 'POST', body: '{"body":"again"}' });
    expect(await gone.json()).toEqual({ status: 'failure', error: 'Conversation expired' });
    expect((await failureOf(conversation.send('again'))).message).toMatch(/closed/);
  });

  it('holds a conversation under a protocol, re-sending its hash', async () => {
    const { calls, fetch } = recordingFetch();
    const conversation = sender({ fetch }).conversation(agent.url, DISTANCE);
    expect((await conversation.send({ miles: 1 })).body).toEqual({ km: 1.609 });
    expect((await conversation.send({ miles: 2 })).body).toEqual({ km: 3.219 });
    await conversation.close();
    expect(calls[2]!.json).toEqual({ protocolHash: DISTANCE_HEX, protocolSources: [encodeDataUri(DISTANCE)], body: { miles: 2 } });
  });

  it("reads failures into AgoraError with the peer's exact text and status", async () => {
    const client = sender();
    const natural = await failureOf(client.query(routinesOnly.url, { body: 'hello' }));
    expect(natural).toMatchObject({ code: 'PEER_FAILURE', message: `POST ${routinesOnly.url}/: HTTP 200: ${NL_ONLY}`, status: 200 });
    const unsupported = await failureOf(client.query(routinesOnly.url, { protocol: NOT_SERVED, body: { sign: 'Leo' } }));
    expect(unsupported).toMatchObject({ code: 'PEER_FAILURE', message: `POST ${routinesOnly.url}/: HTTP 200: Unsupported protocol`, status: 200 });

    const conversation = client.conversation(agent.url);
    const { conversationId } = await conversation.send('What is 1 mile in km?');
    await fetch(`${agent.url}/conversations/${conversationId}`, { method: 'DELETE' });
    const expired = await failureOf(conversation.send('still there?'));
    expect(expired).toMatchObject({ code: 'PEER_FAILURE', message: `POST ${agent.url}/conversations/${conversationId}: HTTP 200: Conversation expired`, status: 200 });
    await conversation.close(); // already gone: closing is done, not an error

    const forgetful = await rawServer((request, respond) =>
      request.url === '/'
        ? respond(200, 'application/json', '{"status":"success","body":"hi","conversationId":"c1","conversationExpires":1900000000}')
        : respond(404, 'application/json', '{"status":"failure","error":"Conversation not found"}'),
    );
    const lost = client.conversation(forgetful.url);
    await lost.send('hello');
    expect(await failureOf(lost.send('again'))).toMatchObject({ code: 'PEER_FAILURE', message: `POST ${forgetful.url}/conversations/c1: HTTP 404: Conversation not found`, status: 404 });
    await lost.close();
  });

  it('names the URL when the answer is not JSON, the peer is silent, or unreachable', async () => {
    const html = await rawServer((_request, respond) => respond(502, 'text/html', '<html><body>Bad gateway</body></html>'));
    const notJson = await failureOf(sender().query(html.url, { body: 'hi' }));
    expect(notJson).toMatchObject({ code: 'PEER_FAILURE', status: 502 });
    expect(notJson.message).toBe(`POST ${html.url}/: HTTP 502, not JSON: <html><body>Bad gateway</body></html>`);

    const silent = await rawServer(() => undefined);
    const timeout = await failureOf(sender({ timeoutMs: 200 }).query(silent.url, { body: 'hi' }));
    expect(timeout).toMatchObject({ code: 'TIMEOUT', message: `POST ${silent.url}/: timed out after 200 ms` });

    const closed = await rawServer(() => undefined);
    await new Promise<void>((resolve) => closed.server.close(() => resolve()));
    const refused = await failureOf(sender().query(closed.url, { body: 'hi' }));
    expect(refused.code).toBe('PEER_FAILURE');
    expect(refused.message).toBe(`POST ${closed.url}/: ECONNREFUSED`);

    const wrong = await rawServer((_request, respond) => respond(200, 'application/json', '{"answer":42}'));
    expect((await failureOf(sender().query(wrong.url, { body: 'hi' }))).message).toBe(`POST ${wrong.url}/: HTTP 200, not an Agora reply`);
  });

  it('joins URLs under a path prefix', async () => {
    const handle = createHandler(agent.receiver, { logger: silentLogger });
    const prefixed = await rawServer((request, respond) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const url = request.url ?? '/';
        if (!url.startsWith('/agora')) return respond(404, 'text/plain', 'outside the prefix');
        void handle({ method: request.method ?? 'GET', path: url.slice('/agora'.length) || '/', headers: request.headers, body: Buffer.concat(chunks) }).then((result) =>
          respond(result.status, result.headers['content-type'] ?? 'text/plain', result.body),
        );
      });
    });
    const base = `${prefixed.url}/agora`;
    const client = sender();
    expect(Object.keys(await client.wellknown(`${base}/`))).toEqual([DISTANCE_HEX]);
    expect((await client.query(base, { protocol: DISTANCE, body: { miles: 5 } })).body).toEqual({ km: 8.047 });
    const conversation = client.conversation(`${base}?ignored=1`);
    await conversation.send('What is 4 miles in km?');
    expect((await conversation.send('ok')).body).toBe('You said: ok');
    await conversation.close();
    expect((await client.protocols(base))[0]).toMatchObject({ hash: DISTANCE_HEX, document: { text: DISTANCE } });
  });

  it('sends base64 to a peer whose /wellknown lists base64 keys', async () => {
    const seen: any[] = [];
    const peer = await rawServer((request, respond) => {
      if (request.method === 'GET') return respond(200, 'application/json', JSON.stringify({ [encodeHash(DISTANCE_HEX, 'base64')]: ['/protocols/x'] }));
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        seen.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        respond(200, 'application/json', '{"status":"success","body":"ok"}');
      });
    });
    await sender().query(peer.url, { protocol: DISTANCE, body: { miles: 1 } });
    expect(seen[0].protocolHash).toBe(encodeHash(DISTANCE_HEX, 'base64'));
  });
});

describe('Python SDK 0.2.0 peers', () => {
  let python: PythonPeer;

  beforeAll(async () => {
    python = await startPythonPeer({
      answer: ({ protocol, body, turn }) => (protocol === null ? `turn ${turn}: ${String(body)}` : { km: km((body as { miles: number }).miles) }),
      unsuitable: (text) => text.includes('Horoscope'),
    });
    cleanup.push(() => python.close());
  });

  afterEach(() => {
    python.requests.length = 0;
  });

  it('sends base64 and a data: source to a peer without /wellknown', async () => {
    const client = sender();
    expect(await client.query(python.url, { protocol: DISTANCE, body: { miles: 5 } })).toEqual({ body: { km: 8.047 } });
    expect(python.requests[0]).toEqual({ method: 'GET', path: '/wellknown' });
    expect(python.requests[1]!.json).toEqual({ protocolHash: pythonHash(DISTANCE), protocolSources: [pythonDataUri(DISTANCE)], body: { miles: 5 } });
    expect(python.protocols.get(pythonHash(DISTANCE))).toBe(DISTANCE);
    // Natural language carries both fields too, which the Python receiver requires.
    expect(await client.query(python.url, { body: 'hello' })).toEqual({ body: 'turn 1: hello' });
  });

  it('holds a conversation with a Python peer, re-sending hash and sources, and closes it', async () => {
    const conversation = sender().conversation(python.url, DISTANCE);
    const first = await conversation.send({ miles: 1 });
    expect(first).toEqual({ body: { km: 1.609 }, conversationId: expect.any(String) });
    expect((await conversation.send({ miles: 2 })).body).toEqual({ km: 3.219 });
    await conversation.close();
    const followUp = python.requests.find((request) => request.path.startsWith('/conversations/') && request.method === 'POST');
    expect(followUp?.json).toEqual({ protocolHash: pythonHash(DISTANCE), protocolSources: [pythonDataUri(DISTANCE)], body: { miles: 2 } });
    expect(python.requests.at(-1)).toEqual({ method: 'DELETE', path: `/conversations/${first.conversationId}` });

    const chat = sender().conversation(python.url);
    await chat.send('a');
    expect((await chat.send('b')).body).toBe('turn 2: b');
    await chat.close();
  });

  it("reads the Python failure shape, keeping the peer's text", async () => {
    const refused = await failureOf(sender().query(python.url, { protocol: NOT_SERVED, body: { sign: 'Leo' } }));
    expect(refused).toMatchObject({ code: 'PEER_FAILURE', message: `POST ${python.url}/: HTTP 200: ${pythonHash(NOT_SERVED)} is not suitable for execution`, status: 200 });
    const conversation = sender().conversation(python.url);
    const { conversationId } = await conversation.send('hi');
    await fetch(`${python.url}/conversations/${conversationId}`, { method: 'DELETE' });
    expect((await failureOf(conversation.send('again'))).message).toBe(`POST ${python.url}/conversations/${conversationId}: HTTP 200: Conversation not found.`);
    await conversation.close();
  });

  it('the emulation refuses hex hashes, as the Python SDK does', async () => {
    const reply = await fetch(`${python.url}/`, { method: 'POST', body: JSON.stringify({ protocolHash: DISTANCE_HEX, protocolSources: [encodeDataUri(DISTANCE)], body: {} }) });
    expect(await reply.json()).toEqual({ status: 'error', message: 'Failed to download protocol' });
  });

  it('answers a Python sender under a protocol (base64 hash)', async () => {
    const task = await pythonSend(agent.url, { protocol: DISTANCE, bodies: [{ miles: 5 }] });
    expect(task.replies).toEqual([{ status: 'success', body: { km: 8.047 } }]);
    expect(task.requests[0]!.json).toEqual({ protocolHash: pythonHash(DISTANCE), protocolSources: [pythonDataUri(DISTANCE)], body: { miles: 5 } });
  });

  it('answers a Python sender in natural language: multiround, re-sent fields, DELETE', async () => {
    const task = await pythonSend(agent.url, { bodies: ['What is 6 miles in km?', 'And back?'] });
    const [first, second, closed] = task.replies;
    expect(first).toMatchObject({ status: 'success', body: '6 miles is 9.656 km.', conversationId: expect.any(String) });
    expect(second).toMatchObject({ status: 'success', body: 'You said: And back?', conversationId: first.conversationId });
    expect(closed).toEqual({ status: 'success', body: null });
    expect(task.requests[1]!.json).toEqual({ protocolHash: null, protocolSources: [], multiround: true, body: 'And back?' });
  });

  it('answers a Python sender in a multiround conversation under a protocol', async () => {
    const task = await pythonSend(agent.url, { protocol: DISTANCE, multiround: true, bodies: [{ miles: 1 }, { miles: 3 }] });
    expect(task.replies.map((reply) => reply.body)).toEqual([{ km: 1.609 }, { km: 4.828 }, null]);
  });
});

describe('typed tasks', () => {
  const Convert = { name: 'Convert miles', description: 'Convert a distance in miles to kilometres.', input: z.object({ miles: z.number() }), output: z.object({ km: z.number() }) };

  async function senderAgent(options: SenderOptions = {}) {
    const fake = await FakeAnthropic.start({ fallback: senderBrain });
    cleanup.push(() => fake.close());
    const dir = await cleanup.tempDir('agora-sender-');
    const make = (extra: SenderOptions = {}) =>
      sender({ llm: new AnthropicModel({ baseURL: fake.url, apiKey: 'test', maxRetries: 0 }), dir, thresholds: { lookForProtocolFrom: 2, negotiateFrom: 3 }, ...options, ...extra });
    return { fake, dir, make };
  }

  const steps = (fake: FakeAnthropic) =>
    fake.requests.map((request) =>
      request.system.includes('natural language') ? 'write-nl' : request.system.includes('You decide') ? 'judge' : request.system.includes('Write the body') ? 'write-body' : 'read',
    );

  it('goes from natural language to a fitting protocol, and keeps its counters across a restart', async () => {
    const { fake, make } = await senderAgent();
    const usage: number[] = [];
    const first = make({ onUsage: (call) => usage.push(call.inputTokens) });
    const convert = first.task(Convert);

    expect(await convert({ miles: 5 }, { target: agent.url })).toEqual({ km: 8.047 });
    expect(steps(fake)).toEqual(['write-nl', 'read']);
    expect(fake.requests[0]!.lastUserText).toContain('Input (JSON): {"miles":5}');

    fake.reset();
    expect(await convert({ miles: 10 }, { target: agent.url })).toEqual({ km: 16.093 });
    expect(steps(fake)).toEqual(['judge', 'write-body', 'read']);
    expect(fake.requests[0]!.lastUserText).toContain(DISTANCE.trim());
    expect(first.usage()).toEqual({ llmCalls: 5, inputTokens: 50, outputTokens: 25 });
    expect(usage).toHaveLength(5);

    const state = await first.taskState('Convert miles', agent.url);
    expect(state).toEqual({ uses: 2, protocolHash: DISTANCE_HEX, verdicts: { [DISTANCE_HEX]: true } });

    // A new sender on the same folder: the third use goes straight to the protocol, no judging again.
    fake.reset();
    const restarted = make();
    expect(await restarted.task(Convert)({ miles: 1 }, { target: `${agent.url}/` })).toEqual({ km: 1.609 });
    expect(steps(fake)).toEqual(['write-body', 'read']);
    expect((await restarted.taskState('Convert miles', agent.url)).uses).toBe(3);
  });

  it('uses a sender routine when an extension supplies one, and reports every call', async () => {
    const events: TaskServedEvent[] = [];
    const { fake, make } = await senderAgent({
      thresholds: { lookForProtocolFrom: 1, negotiateFrom: 5 },
      extensions: {
        taskRoutine: async (task, document) =>
          document.hash === DISTANCE_HEX && task.name === 'Convert miles'
            ? { buildBody: (input) => ({ miles: (input as { miles: number }).miles }), parseReply: (body) => body }
            : undefined,
        served: (event) => void events.push(event),
      },
    });
    const convert = make().task(Convert);
    expect(await convert({ miles: 2 }, { target: agent.url })).toEqual({ km: 3.219 });
    expect(await convert({ miles: 3 }, { target: agent.url })).toEqual({ km: 4.828 });
    expect(steps(fake)).toEqual(['judge']);
    await vi.waitFor(() => expect(events).toHaveLength(2));
    expect(events[1]).toEqual({ task: 'Convert miles', target: agent.url, hash: DISTANCE_HEX, input: { miles: 3 }, body: { miles: 3 }, reply: { km: 4.828 }, output: { km: 4.828 }, llmCalls: 0 });
    expect(events[0]!.llmCalls).toBe(1);
  });

  it('falls back to the LLM when the sender routine throws', async () => {
    const { fake, make } = await senderAgent({
      thresholds: { lookForProtocolFrom: 1, negotiateFrom: 5 },
      extensions: {
        taskRoutine: async () => ({
          buildBody: () => {
            throw new Error('bug');
          },
          parseReply: () => ({ kilometres: 1 }),
        }),
      },
    });
    expect(await make().task(Convert)({ miles: 5 }, { target: agent.url })).toEqual({ km: 8.047 });
    expect(steps(fake)).toEqual(['judge', 'write-body', 'read']);
  });

  it('gives up with INVALID_OUTPUT when the reply cannot be read after one repair', async () => {
    const { fake, make } = await senderAgent();
    fake.setFallback((request) => (request.system.includes('turn its reply') ? 'It is about eight kilometres.' : senderBrain(request)));
    const error = await failureOf(make().task(Convert)({ miles: 5 }, { target: agent.url }));
    expect(error.code).toBe('INVALID_OUTPUT');
    expect(error.message).toMatch(/^task "Convert miles": the reply could not be turned into the task's output: not JSON/);
    expect(steps(fake)).toEqual(['write-nl', 'read', 'read']);
    expect(fake.requests[2]!.lastUserText).toMatch(/^Your reply is not usable: not JSON/);
  });

  it('refuses an input that does not match the task', async () => {
    const { make } = await senderAgent();
    const error = await failureOf(make().task(Convert)({ miles: 'five' } as never, { target: agent.url }));
    expect(error.code).toBe('BAD_REQUEST');
    expect(error.message).toContain('task "Convert miles": invalid input');
  });
});
