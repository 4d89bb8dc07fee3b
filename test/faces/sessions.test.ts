// Face sessions, one design for every face: a client's id kept and echoed, scoped by its caller, bounded without ever
// dropping a live one, and kept in the agent's memory when processes share it.
import { describe, expect, it } from 'vitest';
import { ask } from '../../src/faces/ask.js';
import { FaceSessions, sessionKey, tokenScope } from '../../src/faces/sessions.js';
import { InMemoryMemory } from '../../src/memory/file.js';
import type { Logger } from '../../src/log.js';
import { fakeReceiver, makeFaces, PROTOCOL_HASH, serveFaces } from './_helpers.js';

/** A memory other processes would share (as Redis is): sessions are kept in it, not in the process. */
class SharedMemory extends InMemoryMemory {
  readonly shared = true;
}

describe('FaceSessions', () => {
  it('refuses a new session when full of live ones, never dropping one, and admits again once one expired', async () => {
    const receiver = fakeReceiver();
    let clock = Date.now();
    const sessions = new FaceSessions('a2a', undefined, { maxSessions: 2, now: () => clock });
    const turn = (session: string, body: string) => ask(receiver, sessions, { body, session });
    await turn('a', 'one');
    await turn('b', 'one');
    await expect(turn('c', 'one')).rejects.toMatchObject({ code: 'TOO_MANY_CONVERSATIONS' });
    expect((await turn('a', 'two')).body).toBe('turn 2: two');
    expect((await turn('b', 'two')).body).toBe('turn 2: two');
    clock += 301_000; // both conversations expired (the receiver gives them 300 s)
    expect((await turn('c', 'one')).body).toBe('turn 1: one');
  });

  it('keeps one conversation per protocol in a session, and bounds how many', async () => {
    const receiver = fakeReceiver();
    const sessions = new FaceSessions('roar', undefined, { maxConversations: 2 });
    const session = sessionKey(undefined, 's');
    expect((await ask(receiver, sessions, { body: 'hi', session })).body).toBe('turn 1: hi');
    await ask(receiver, sessions, { protocolHash: 'p1', body: {}, session });
    expect((await ask(receiver, sessions, { body: 'again', session })).body).toBe('turn 2: again');
    await expect(ask(receiver, sessions, { protocolHash: 'p2', body: {}, session })).rejects.toMatchObject({
      code: 'TOO_MANY_CONVERSATIONS',
    });
  });

  it("keeps no conversation for a single-round protocol's query: a flood of one-shot messages fills no table", async () => {
    const receiver = fakeReceiver();
    const sessions = new FaceSessions('a2a', undefined, { maxSessions: 1 });
    // PROTOCOL_TEXT says `multiround: false`.
    for (const id of ['one', 'two', 'three'])
      await ask(receiver, sessions, {
        protocolHash: PROTOCOL_HASH,
        body: { value: 1 },
        session: sessionKey(undefined, id),
      });
    expect(receiver.queries.map((query) => query.multiround)).toEqual([undefined, undefined, undefined]);
    expect(await sessions.hasRoom()).toBe(true);
  });

  it('serves two turns of a new session one after the other: the second continues the conversation the first opened', async () => {
    const receiver = fakeReceiver();
    const sessions = new FaceSessions('a2a', undefined);
    const session = sessionKey(undefined, 'together');
    const replies = await Promise.all([
      ask(receiver, sessions, { body: 'one', session }),
      ask(receiver, sessions, { body: 'two', session }),
    ]);
    expect(replies.map((reply) => reply.body)).toEqual(['turn 1: one', 'turn 2: two']);
    expect(receiver.queries).toHaveLength(1);
  });

  it('keeps sessions in a shared memory, where another process finds them, and never in a memory of its own', async () => {
    const receiver = fakeReceiver();
    const memory = new SharedMemory();
    const session = sessionKey(tokenScope('Bearer alice'), 'ctx');
    await ask(receiver, new FaceSessions('a2a', memory), { body: 'one', session });
    // Another process (another FaceSessions over the same memory) continues the same conversation.
    expect((await ask(receiver, new FaceSessions('a2a', memory), { body: 'two', session })).body).toBe('turn 2: two');
    expect(await memory.keys('sessions/a2a/')).toHaveLength(1);
    const own = new InMemoryMemory();
    await ask(receiver, new FaceSessions('a2a', own), { body: 'one', session });
    expect(await own.keys('')).toEqual([]);
  });

  it('sweeps abandoned sessions from the memory to make room, and counts those an earlier run left', async () => {
    const memory = new SharedMemory();
    let now = 1_000_000;
    const sessions = new FaceSessions('mcp', memory, {
      idleMs: 60_000,
      maxSessions: 3,
      sweepEveryMs: 10_000,
      now: () => now,
    });
    for (let index = 0; index < 3; index++) {
      expect(await sessions.hasRoom()).toBe(true);
      await sessions.open(sessionKey(undefined, `s${index}`));
    }
    expect(await sessions.hasRoom()).toBe(false);
    const later = new FaceSessions('mcp', memory, { idleMs: 60_000, maxSessions: 3, now: () => now });
    expect(await later.hasRoom()).toBe(false);
    expect(await later.close(sessionKey(undefined, 's0'), { end: async () => {} })).toBe(true);
    expect(await later.hasRoom()).toBe(true);
    // Abandoned: past their idle time, nobody touched them again. The next opening sweeps them.
    now += 61_000;
    expect(await sessions.hasRoom()).toBe(true);
    expect(await memory.keys('sessions/mcp/')).toEqual([]);
  });
});

type Rpc = {
  result?: { id: string; contextId: string; status: { state: string }; artifacts?: { parts: { text?: string }[] }[] };
  error?: { code: number; message: string };
};

async function rpc(url: string, method: string, params: unknown, token?: string): Promise<Rpc> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  return (await (
    await fetch(`${url}/a2a`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    })
  ).json()) as Rpc;
}

async function send(url: string, text: string, contextId: string | undefined, token?: string) {
  const message = {
    kind: 'message',
    messageId: text,
    role: 'user',
    parts: [{ kind: 'text', text }],
    ...(contextId !== undefined ? { contextId } : {}),
  };
  const reply = await rpc(url, 'message/send', { message }, token);
  return {
    contextId: reply.result!.contextId,
    answer: reply.result!.artifacts?.[0]?.parts[0]?.text,
    taskId: reply.result!.id,
  };
}

describe('A2A contextId', () => {
  it("without tokens, continues the contextId of a first message's task, and keeps a client's own", async () => {
    const served = await serveFaces(makeFaces());
    try {
      const first = await send(served.url, 'hi', undefined);
      expect(first.answer).toBe('turn 1: hi');
      expect(await send(served.url, 'again', first.contextId)).toMatchObject({
        contextId: first.contextId,
        answer: 'turn 2: again',
      });
      expect(await send(served.url, 'mine', 'chosen')).toMatchObject({ contextId: 'chosen', answer: 'turn 1: mine' });
      expect(await send(served.url, 'still mine', 'chosen')).toMatchObject({
        contextId: 'chosen',
        answer: 'turn 2: still mine',
      });
    } finally {
      await served.close();
    }
  });

  it("with tokens, keeps the client's contextId, scoped by its token, and a task is read only with the token that made it", async () => {
    const served = await serveFaces(makeFaces({ tokens: ['alice', 'bob'] }));
    try {
      const alice = await send(served.url, 'hi', 'ctx', 'alice');
      expect(alice).toMatchObject({ contextId: 'ctx', answer: 'turn 1: hi' });
      expect(await send(served.url, 'hi', 'ctx', 'bob')).toMatchObject({ contextId: 'ctx', answer: 'turn 1: hi' });
      expect(await send(served.url, 'again', 'ctx', 'alice')).toMatchObject({
        contextId: 'ctx',
        answer: 'turn 2: again',
      });
      expect((await rpc(served.url, 'tasks/get', { id: alice.taskId }, 'alice')).result?.id).toBe(alice.taskId);
      expect((await rpc(served.url, 'tasks/get', { id: alice.taskId }, 'bob')).error).toMatchObject({ code: -32001 });
    } finally {
      await served.close();
    }
  });

  it("answers method names of Object's prototype as unknown methods, logging nothing", async () => {
    const errors: string[] = [];
    const logger: Logger = { info() {}, warn() {}, error: (line: string) => void errors.push(line) };
    const served = await serveFaces(makeFaces({ logger }));
    try {
      for (const method of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf']) {
        expect((await rpc(served.url, method, {})).error, method).toMatchObject({ code: -32601 });
      }
      expect(errors).toEqual([]);
    } finally {
      await served.close();
    }
  });
});

describe('ROAR session_id', () => {
  it("without tokens, a client's own session_id is the one its events are read by (the SDK's http_stream_events)", async () => {
    const faces = makeFaces();
    const served = await serveFaces(faces);
    try {
      const did = (await faces.identity()).did;
      const response = await fetch(`${served.url}/roar/events?session_id=client-picked`);
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      const message = JSON.stringify({
        roar: '1.0',
        id: 'msg_1',
        from: { did: 'did:roar:agent:sender-0123456789abcdef' },
        to: { did },
        intent: 'delegate',
        payload: { task: 'hi' },
        context: { session_id: 'client-picked' },
        auth: {},
        timestamp: Date.now() / 1000,
      });
      const reply = (await (await fetch(`${served.url}/roar/message`, { method: 'POST', body: message })).json()) as {
        context: { session_id: string };
      };
      expect(reply.context.session_id).toBe('client-picked');
      let text = '';
      while (!text.includes('"completed"')) text += (await reader.read()).value ?? '';
      await reader.cancel();
      expect(text).toContain('"session_id":"client-picked"');
    } finally {
      await served.close();
    }
  });
});
