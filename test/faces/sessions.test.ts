import { describe, expect, it } from 'vitest';
import { ask, SessionMap } from '../../src/faces/ask.js';
import { fakeReceiver, makeFaces, serveFaces } from './_helpers.js';

describe('face sessions live as long as their conversation', () => {
  it('refuses a new session when full of live ones, never dropping one, and admits again once one expired', async () => {
    const receiver = fakeReceiver();
    let clock = Date.now();
    const sessions = new SessionMap({ maxSessions: 2, now: () => clock });
    const turn = (session: string, body: string) => ask(receiver, sessions, { body, session });
    await turn('a', 'one');
    await turn('b', 'one');
    await expect(turn('c', 'one')).rejects.toMatchObject({ code: 'TOO_MANY_CONVERSATIONS' });
    expect((await turn('a', 'two')).body).toBe('turn 2: two');
    expect((await turn('b', 'two')).body).toBe('turn 2: two');
    clock += 301_000; // both conversations expired (the receiver gives them 300 s)
    expect((await turn('c', 'one')).body).toBe('turn 1: one');
  });
});

type Rpc = { result?: { contextId: string; status: { state: string }; artifacts?: { parts: { text?: string }[] }[] } };

describe('A2A contextId scope', () => {
  const send = async (url: string, text: string, contextId: string, token?: string) => {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    const body = { jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', messageId: text, contextId, role: 'user', parts: [{ kind: 'text', text }] } } };
    const reply = (await (await fetch(`${url}/a2a`, { method: 'POST', headers, body: JSON.stringify(body) })).json()) as Rpc;
    return { contextId: reply.result!.contextId, answer: reply.result!.artifacts?.[0]?.parts[0]?.text };
  };

  it('without tokens, continues only a contextId the face issued: a guessed one starts a new conversation', async () => {
    const served = await serveFaces(makeFaces());
    try {
      const first = await send(served.url, 'hi', 'shared');
      expect(first.answer).toBe('turn 1: hi');
      expect(first.contextId).not.toBe('shared');
      expect(await send(served.url, 'again', first.contextId)).toEqual({ contextId: first.contextId, answer: 'turn 2: again' });
      const stranger = await send(served.url, 'mine?', 'shared');
      expect(stranger.answer).toBe('turn 1: mine?');
      expect(stranger.contextId).not.toBe(first.contextId);
    } finally {
      await served.close();
    }
  });

  it('with tokens, keeps the client\'s contextId, scoped by its token', async () => {
    const served = await serveFaces(makeFaces({ tokens: ['alice', 'bob'] }));
    try {
      expect(await send(served.url, 'hi', 'ctx', 'alice')).toEqual({ contextId: 'ctx', answer: 'turn 1: hi' });
      expect(await send(served.url, 'hi', 'ctx', 'bob')).toEqual({ contextId: 'ctx', answer: 'turn 1: hi' });
      expect(await send(served.url, 'again', 'ctx', 'alice')).toEqual({ contextId: 'ctx', answer: 'turn 2: again' });
    } finally {
      await served.close();
    }
  });
});
