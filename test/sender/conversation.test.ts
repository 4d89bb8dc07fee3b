// src/sender/conversation.ts: multiround conversations with a peer.
import { describe, expect, it } from 'vitest';
import { encodeDataUri } from '../../src/protocol/sources.js';
import { DISTANCE, DISTANCE_HEX, failureOf, recordingFetch, senderSuite } from '../helpers/sender.js';
import { pythonDataUri, pythonHash } from '../helpers/python-peer.js';

const { sender, peers } = senderSuite({ python: true });

describe('conversations with our receiver', () => {
  it('holds a conversation, then closes it with one DELETE however often close is called', async () => {
    const { calls, fetch } = recordingFetch();
    const conversation = sender({ fetch }).conversation(peers.agent.url);
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
      `POST ${peers.agent.url}/`,
      `POST ${peers.agent.url}/conversations/${id}`,
      `DELETE ${peers.agent.url}/conversations/${id}`,
    ]);
    expect(calls[0]!.json).toEqual({
      protocolHash: null,
      protocolSources: [],
      body: 'What is 2 miles in km?',
      multiround: true,
    });
    expect(calls[1]!.json).toEqual({ protocolHash: null, protocolSources: [], body: 'Thanks' });
    const gone = await fetch(`${peers.agent.url}/conversations/${id}`, { method: 'POST', body: '{"body":"again"}' });
    expect(await gone.json()).toEqual({ status: 'failure', error: 'Conversation expired' });
    expect((await failureOf(conversation.send('again'))).message).toMatch(/closed/);
  });

  it('holds a conversation under a protocol, re-sending its hash', async () => {
    const { calls, fetch } = recordingFetch();
    const conversation = sender({ fetch }).conversation(peers.agent.url, DISTANCE);
    expect((await conversation.send({ miles: 1 })).body).toEqual({ km: 1.609 });
    expect((await conversation.send({ miles: 2 })).body).toEqual({ km: 3.219 });
    await conversation.close();
    expect(calls[2]!.json).toEqual({
      protocolHash: DISTANCE_HEX,
      protocolSources: [encodeDataUri(DISTANCE)],
      body: { miles: 2 },
    });
  });
});

describe('Python SDK 0.2.0 peers', () => {
  it('holds a conversation with a Python peer, re-sending hash and sources, and closes it', async () => {
    const conversation = sender().conversation(peers.python.url, DISTANCE);
    const first = await conversation.send({ miles: 1 });
    expect(first).toEqual({ body: { km: 1.609 }, conversationId: expect.any(String) });
    expect((await conversation.send({ miles: 2 })).body).toEqual({ km: 3.219 });
    await conversation.close();
    const followUp = peers.python.requests.find(
      (request) => request.path.startsWith('/conversations/') && request.method === 'POST',
    );
    // The body goes as JSON text, which Python receivers read; their JSON text replies are read back above.
    expect(followUp?.json).toEqual({
      protocolHash: pythonHash(DISTANCE),
      protocolSources: [pythonDataUri(DISTANCE)],
      body: '{"miles":2}',
    });
    expect(peers.python.requests.at(-1)).toEqual({ method: 'DELETE', path: `/conversations/${first.conversationId}` });

    const chat = sender().conversation(peers.python.url);
    await chat.send('a');
    expect((await chat.send('b')).body).toBe('turn 2: b');
    await chat.close();
  });
});
