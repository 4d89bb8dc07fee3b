// src/sender/conversation.ts: multiround conversations with a peer.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { encodeDataUri } from '../../src/protocol/sources.js';
import { DISTANCE, DISTANCE_HEX, failureOf, km, recordingFetch, senderFixture, type Started } from '../helpers/sender.js';
import { pythonDataUri, pythonHash, startPythonPeer, type PythonPeer } from '../helpers/python-peer.js';

const { cleanup, startReceiver, sender } = senderFixture();
let agent: Started;

beforeAll(async () => {
  agent = await startReceiver();
});

afterAll(() => cleanup.run());

describe('conversations with our receiver', () => {
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

});
