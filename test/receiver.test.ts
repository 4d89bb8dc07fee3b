import { afterEach, describe, expect, it } from 'vitest';
import { rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MemoryConversationStore } from '../src/conversation/store.js';
import { hashText } from '../src/protocol/document.js';
import { encodeDataUri } from '../src/protocol/sources.js';
import { memoryLogger } from '../src/log.js';
import { Receiver, type ReceiverOptions } from '../src/receiver.js';
import { echoProtocol, eventually, makeAgentFolder } from './helpers/agent-folder.js';

const ECHO_ROUTINE = `
import { z } from 'zod';
import { defineRoutine } from 'agora-agents';
export default defineRoutine({
  input: z.object({ message: z.string() }),
  output: z.object({ echo: z.string() }),
  handle: ({ message }, context) => ({ echo: message + (context.conversation.turn > 1 ? ' #' + context.conversation.turn : '') }),
});
`;

const COUNTER_ROUTINE = `
export default async function (body: { add: number }, context: any) {
  const before = (context.conversation.state.total as number | undefined) ?? 0;
  // Yields to the event loop: were turns not one at a time, another would read the same total here.
  await new Promise((resolve) => setImmediate(resolve));
  context.conversation.state.total = before + body.add;
  return { total: context.conversation.state.total, turn: context.conversation.turn, id: context.conversation.id };
}
`;

const COUNTER_PD =
  '---\nname: Counter\ndescription: Adds numbers over turns.\nmultiround: true\n---\nThe sender sends JSON {"add": number}; the receiver replies JSON {"total": number}.\n';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(files: Record<string, string>, options: Partial<ReceiverOptions> = {}) {
  const folder = await makeAgentFolder(files);
  const logger = memoryLogger();
  const receiver = await Receiver.start({ dir: folder.dir, logger, watch: false, ...options });
  cleanups.push(folder.cleanup, () => receiver.close());
  return { receiver, folder, logger };
}

function codeOf(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => 'resolved',
    (error: { code?: string }) => error.code ?? String(error),
  );
}

describe('Receiver with routines', () => {
  it('answers a known protocol with its routine, in hex or base64', async () => {
    const { receiver } = await setup({ 'protocols/echo.md': echoProtocol(), 'routines/echo.ts': ECHO_ROUTINE });
    const hash = hashText(echoProtocol());
    expect(await receiver.query({ protocolHash: hash, body: { message: 'hi' } })).toEqual({
      status: 'success',
      body: { echo: 'hi' },
    });
    expect(
      (await receiver.query({ protocolHash: hashText(echoProtocol(), 'base64'), body: { message: 'b64' } })).body,
    ).toEqual({ echo: 'b64' });
    expect((await receiver.query({ protocolHash: hash.toUpperCase(), body: { message: 'HEX' } })).body).toEqual({
      echo: 'HEX',
    });
  });

  it('lists what it can answer at /wellknown with its own /protocols URL and extra sources', async () => {
    const withSources =
      '---\nname: S\ndescription: d\nmultiround: false\nsources: ["https://example.org/s.md"]\n---\ntext\n';
    const { receiver } = await setup({
      'protocols/echo.md': echoProtocol(),
      'routines/echo.ts': ECHO_ROUTINE,
      'protocols/s.md': withSources,
      'routines/s.ts': 'export default () => 1;',
      'protocols/nollm.md': echoProtocol('No routine'),
    });
    const listing = await receiver.wellknown({ baseUrl: 'http://127.0.0.1:9/agora' });
    expect(listing).toEqual({
      [hashText(echoProtocol())]: [`http://127.0.0.1:9/agora/protocols/${hashText(echoProtocol())}`],
      [hashText(withSources)]: [
        `http://127.0.0.1:9/agora/protocols/${hashText(withSources)}`,
        'https://example.org/s.md',
      ],
    });
    expect(await receiver.document(hashText(echoProtocol(), 'base64'))).toBe(echoProtocol());
  });

  it('uses the public URL when one is configured', async () => {
    const { receiver } = await setup(
      { 'protocols/echo.md': echoProtocol(), 'routines/echo.ts': ECHO_ROUTINE },
      { publicUrl: 'https://agent.example.com/base/' },
    );
    expect(Object.values(await receiver.wellknown({ baseUrl: 'http://internal' }))[0]).toEqual([
      `https://agent.example.com/base/protocols/${hashText(echoProtocol())}`,
    ]);
  });

  it('answers a body that fails the input schema with the PD’s own error', async () => {
    const { receiver } = await setup({ 'protocols/echo.md': echoProtocol(), 'routines/echo.ts': ECHO_ROUTINE });
    expect((await receiver.query({ protocolHash: hashText(echoProtocol()), body: { wrong: 1 } })).body).toEqual({
      error: 'Invalid format',
    });
  });

  it('fails clearly when the body fails the input schema and the PD prescribes no error', async () => {
    const pd = '---\nname: Strict\ndescription: d\nmultiround: false\n---\nSend {"n": number}.\n';
    const { receiver } = await setup({
      'protocols/strict.md': pd,
      'routines/strict.ts':
        "import { z } from 'zod'; import { defineRoutine } from 'agora-agents'; export default defineRoutine({ input: z.object({ n: z.number() }), handle: ({ n }) => n * 2 });",
    });
    expect((await receiver.query({ protocolHash: hashText(pd), body: { n: 2 } })).body).toBe(4);
    await expect(receiver.query({ protocolHash: hashText(pd), body: { n: 'x' } })).rejects.toMatchObject({
      code: 'BAD_REQUEST',
      message: expect.stringMatching(/Strict[\s\S]*→ at n$/),
    });
  });

  it('turns a throwing routine into Routine failed, with details in the log only', async () => {
    const { receiver, logger } = await setup({
      'protocols/echo.md': echoProtocol(),
      'routines/echo.ts': 'export default () => { throw new Error("secret detail"); };',
    });
    const error = await receiver
      .query({ protocolHash: hashText(echoProtocol()), body: { message: 'x' } })
      .catch((caught: Error) => caught);
    expect(error).toMatchObject({ code: 'ROUTINE_FAILED', message: 'Routine failed' });
    expect(logger.lines.join('\n')).toContain('secret detail');
  });

  it('stops a routine past its time limit', async () => {
    const { receiver } = await setup(
      { 'protocols/echo.md': echoProtocol(), 'routines/echo.ts': 'export default () => new Promise(() => {});' },
      { routineTimeoutMs: 100 },
    );
    // The routine never settles: only the time limit can produce this answer.
    expect(await codeOf(receiver.query({ protocolHash: hashText(echoProtocol()), body: {} }))).toBe('ROUTINE_FAILED');
  });

  it('refuses a reply its output schema refuses', async () => {
    const { receiver } = await setup({
      'protocols/echo.md': echoProtocol(),
      'routines/echo.ts':
        "import { z } from 'zod'; import { defineRoutine } from 'agora-agents'; export default defineRoutine({ output: z.object({ echo: z.string() }), handle: () => ({ echo: 1 }) });",
    });
    expect(await codeOf(receiver.query({ protocolHash: hashText(echoProtocol()), body: {} }))).toBe('ROUTINE_FAILED');
  });

  it('keeps state across the turns of a multiround conversation and slides the expiry', async () => {
    let now = 1_000_000;
    const store = new MemoryConversationStore({ now: () => now, sweepIntervalMs: 0 });
    const { receiver } = await setup(
      { 'protocols/counter.md': COUNTER_PD, 'routines/counter.ts': COUNTER_ROUTINE },
      { store, now: () => now, conversationTtlMs: 60_000 },
    );
    const first = await receiver.query({ protocolHash: hashText(COUNTER_PD), body: { add: 2 }, multiround: true });
    expect(first.conversationId).toMatch(/^[A-Za-z0-9_-]{21,}$/);
    expect(first.conversationExpires).toBe(Math.floor((now + 60_000) / 1000));
    expect(first.body).toEqual({ total: 2, turn: 1, id: first.conversationId });
    now += 50_000;
    const second = await receiver.followUp(first.conversationId!, { body: { add: 3 } });
    expect(second).toMatchObject({
      body: { total: 5, turn: 2 },
      conversationId: first.conversationId,
      conversationExpires: Math.floor((now + 60_000) / 1000),
    });
    now += 50_000; // 100 s after the start, but only 50 s after the last turn: still live
    expect((await receiver.followUp(first.conversationId!, { body: { add: 1 } })).body).toMatchObject({ total: 6 });
    now += 61_000;
    expect(await codeOf(receiver.followUp(first.conversationId!, { body: { add: 1 } }))).toBe('CONVERSATION_EXPIRED');
    expect(await codeOf(receiver.followUp('never-known-id-000000000', { body: {} }))).toBe('CONVERSATION_NOT_FOUND');
  });

  it('runs concurrent turns of one conversation one at a time, losing no update', async () => {
    const { receiver } = await setup({ 'protocols/counter.md': COUNTER_PD, 'routines/counter.ts': COUNTER_ROUTINE });
    const first = await receiver.query({ protocolHash: hashText(COUNTER_PD), body: { add: 0 }, multiround: true });
    await Promise.all(Array.from({ length: 40 }, () => receiver.followUp(first.conversationId!, { body: { add: 1 } })));
    expect((await receiver.followUp(first.conversationId!, { body: { add: 0 } })).body).toMatchObject({
      total: 40,
      turn: 42,
    });
  });

  it('refuses a follow-up under another protocol, accepts a repeated hash', async () => {
    const { receiver } = await setup({
      'protocols/counter.md': COUNTER_PD,
      'routines/counter.ts': COUNTER_ROUTINE,
      'protocols/echo.md': echoProtocol(),
      'routines/echo.ts': ECHO_ROUTINE,
    });
    const first = await receiver.query({ protocolHash: hashText(COUNTER_PD), body: { add: 1 }, multiround: true });
    expect(
      await codeOf(
        receiver.followUp(first.conversationId!, { protocolHash: hashText(echoProtocol()), body: { message: 'x' } }),
      ),
    ).toBe('PROTOCOL_CHANGED');
    expect(
      (
        await receiver.followUp(first.conversationId!, {
          protocolHash: hashText(COUNTER_PD, 'base64'),
          protocolSources: [],
          body: { add: 1 },
        })
      ).body,
    ).toMatchObject({ total: 2 });
  });

  it('ends a conversation with end(): later turns are expired', async () => {
    const { receiver } = await setup({ 'protocols/counter.md': COUNTER_PD, 'routines/counter.ts': COUNTER_ROUTINE });
    const first = await receiver.query({ protocolHash: hashText(COUNTER_PD), body: { add: 1 }, multiround: true });
    await receiver.end(first.conversationId!);
    expect(await codeOf(receiver.followUp(first.conversationId!, { body: { add: 1 } }))).toBe('CONVERSATION_EXPIRED');
    expect(await codeOf(receiver.end('unknown-conversation-id-0'))).toBe('CONVERSATION_NOT_FOUND');
  });

  it('caps live conversations', async () => {
    const { receiver } = await setup(
      { 'protocols/counter.md': COUNTER_PD, 'routines/counter.ts': COUNTER_ROUTINE },
      { maxConversations: 2 },
    );
    for (let index = 0; index < 2; index++)
      await receiver.query({ protocolHash: hashText(COUNTER_PD), body: { add: 1 }, multiround: true });
    expect(
      await codeOf(receiver.query({ protocolHash: hashText(COUNTER_PD), body: { add: 1 }, multiround: true })),
    ).toBe('TOO_MANY_CONVERSATIONS');
    expect((await receiver.query({ protocolHash: hashText(COUNTER_PD), body: { add: 1 } })).body).toMatchObject({
      total: 1,
    });
  });

  it('holds the conversation cap under concurrency: 40 concurrent first turns with a cap of 5 make 5 conversations', async () => {
    const { receiver } = await setup(
      { 'protocols/counter.md': COUNTER_PD, 'routines/counter.ts': COUNTER_ROUTINE },
      { maxConversations: 5 },
    );
    const outcomes = await Promise.allSettled(
      Array.from({ length: 40 }, () =>
        receiver.query({ protocolHash: hashText(COUNTER_PD), body: { add: 1 }, multiround: true }),
      ),
    );
    const opened = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    expect(opened).toHaveLength(5);
    expect(await receiver.store.count()).toBe(5);
    for (const outcome of outcomes)
      if (outcome.status === 'rejected') expect(outcome.reason).toMatchObject({ code: 'TOO_MANY_CONVERSATIONS' });
    // Places were given back once stored: ending one conversation makes room for exactly one more.
    await receiver.end((opened[0] as PromiseFulfilledResult<{ conversationId?: string }>).value.conversationId!);
    expect(
      (await receiver.query({ protocolHash: hashText(COUNTER_PD), body: { add: 1 }, multiround: true })).conversationId,
    ).toBeDefined();
    expect(
      await codeOf(receiver.query({ protocolHash: hashText(COUNTER_PD), body: { add: 1 }, multiround: true })),
    ).toBe('TOO_MANY_CONVERSATIONS');
  });

  it('gives the fixed failures without an LLM', async () => {
    const { receiver } = await setup({ 'protocols/echo.md': echoProtocol() });
    await expect(receiver.query({ body: 'hello' })).rejects.toMatchObject({
      code: 'NATURAL_LANGUAGE_UNSUPPORTED',
      message: 'This agent only accepts queries under the protocols listed at /wellknown',
    });
    await expect(receiver.query({ protocolHash: hashText(echoProtocol()), body: {} })).rejects.toMatchObject({
      message: 'Unsupported protocol',
    });
    await expect(receiver.query({ protocolHash: 'a'.repeat(40), body: {} })).rejects.toMatchObject({
      message: 'Unsupported protocol',
    });
    await expect(
      receiver.query({ protocolHash: 'negotiation', body: 'let us talk', multiround: true }),
    ).rejects.toMatchObject({ message: 'Unsupported protocol' });
    expect(await receiver.wellknown()).toEqual({});
  });

  it("neither stores nor serves a stranger's document it will not answer (finding 3)", async () => {
    const { receiver, folder } = await setup({});
    const texts = Array.from({ length: 40 }, (_, index) => echoProtocol(`Stranger ${index}`));
    for (const text of texts) {
      await expect(
        receiver.query({ protocolHash: hashText(text, 'base64'), protocolSources: [encodeDataUri(text)], body: {} }),
      ).rejects.toMatchObject({ message: 'Unsupported protocol' });
    }
    for (const text of texts) expect(await receiver.document(hashText(text))).toBeUndefined();
    expect(await receiver.memory.keys('documents/')).toEqual([]);
    expect(await receiver.wellknown()).toEqual({});
    // Held only in a small cache for the query that brought it.
    expect(receiver.registry.learnedSize()).toEqual({ count: 0, bytes: 0, candidates: 16 });
    await receiver.close();
    const again = await Receiver.start({ dir: folder.dir, watch: false, logger: memoryLogger() });
    cleanups.push(() => again.close());
    expect(await again.document(hashText(texts[0]!))).toBeUndefined();
  });

  it('refuses a document over the size cap from a data: source without reading it further', async () => {
    const text = echoProtocol(`Huge ${'x'.repeat(900 * 1024)}`);
    const { receiver, logger } = await setup({});
    await expect(
      receiver.query({ protocolHash: hashText(text), protocolSources: [encodeDataUri(text)], body: {} }),
    ).rejects.toMatchObject({ message: 'Unsupported protocol' });
    expect(logger.lines.some((line) => /larger than 65536 bytes/.test(line))).toBe(true);
    const small = await setup({}, { maxDocumentBytes: 100 });
    await expect(
      small.receiver.query({
        protocolHash: hashText(echoProtocol('Small')),
        protocolSources: [encodeDataUri(echoProtocol('Small'))],
        body: {},
      }),
    ).rejects.toMatchObject({ message: 'Unsupported protocol' });
    expect(small.logger.lines.some((line) => /larger than 100 bytes/.test(line))).toBe(true);
  });

  it("stores and serves a stranger's document once a routine answers it, and knows it after a restart", async () => {
    const text = echoProtocol('Learned');
    const hash = hashText(text);
    const extensions = {
      routineFor: async (wanted: string) => (wanted === hash ? async () => ({ echo: 'generated' }) : undefined),
    };
    const { receiver, folder } = await setup({}, { extensions });
    expect(
      await receiver.query({
        protocolHash: hashText(text, 'base64'),
        protocolSources: [encodeDataUri(text)],
        body: {},
      }),
    ).toEqual({ status: 'success', body: { echo: 'generated' } });
    expect(await receiver.document(hash)).toBe(text);
    expect(await receiver.memory.keys('documents/')).toEqual([`documents/${hash}`]);
    await receiver.close();
    const again = await Receiver.start({ dir: folder.dir, watch: false, logger: memoryLogger(), extensions });
    cleanups.push(() => again.close());
    expect(await again.document(hash)).toBe(text);
    expect((await again.query({ protocolHash: hash, body: {} })).body).toEqual({ echo: 'generated' });
  });

  it('drops a protocol file being rewritten from /wellknown at once, and keeps its old text for conversations under way only (finding 11)', async () => {
    let now = Date.now() + 10_000;
    const first = echoProtocol('Echo', true);
    const { receiver, folder } = await setup(
      { 'protocols/echo.md': first, 'routines/echo.ts': ECHO_ROUTINE },
      { now: () => now },
    );
    const oldHash = hashText(first);
    const started = await receiver.query({ protocolHash: oldHash, body: { message: 'a' }, multiround: true });
    const file = join(folder.dir, 'protocols', 'echo.md');
    const second = echoProtocol('Echo', true, `Version two. ${'y'.repeat(50_000)}\n`);
    // Rewritten in place, half-way: 100 ms since the last write, not settled.
    await writeFile(file, second.slice(0, 20_000));
    await utimes(file, new Date(now), new Date(now - 100));
    await receiver.registry.scan();
    expect(await receiver.wellknown()).toEqual({});
    await expect(receiver.query({ protocolHash: oldHash, body: { message: 'new' } })).rejects.toMatchObject({
      message: 'Unsupported protocol',
    });
    await expect(
      receiver.query({ protocolHash: hashText(second.slice(0, 20_000)), body: { message: 'torn' } }),
    ).rejects.toMatchObject({ message: 'Unsupported protocol' });
    // The conversation begun under the old text goes on.
    expect((await receiver.followUp(started.conversationId!, { body: { message: 'b' } })).body).toEqual({
      echo: 'b #2',
    });
    // Whole and settled: listed under its new hash only.
    await writeFile(file, second);
    now = Date.now() + 10_000;
    await receiver.registry.scan();
    expect(Object.keys(await receiver.wellknown())).toEqual([hashText(second)]);
    expect((await receiver.query({ protocolHash: hashText(second), body: { message: 'c' } })).body).toEqual({
      echo: 'c',
    });
  });

  it('reloads routines when their file changes and serves new protocol files', async () => {
    const { folder, logger } = await setup({});
    const receiver = await Receiver.start({ dir: folder.dir, logger, watch: true });
    cleanups.push(() => receiver.close());
    await folder.write('protocols/echo.md', echoProtocol());
    await folder.write('routines/echo.ts', 'export default () => ({ echo: "v1" });');
    const hash = hashText(echoProtocol());
    await eventually(async () => Boolean((await receiver.wellknown())[hash]));
    await eventually(
      async () =>
        (await receiver.query({ protocolHash: hash, body: {} }).then(
          (reply) => reply.body,
          () => null,
        )) !== null,
    );
    await folder.write('routines/echo.ts', 'export default () => ({ echo: "v2" });');
    await eventually(
      async () => JSON.stringify((await receiver.query({ protocolHash: hash, body: {} })).body) === '{"echo":"v2"}',
    );
    await rm(join(folder.dir, 'protocols', 'echo.md'));
    await eventually(async () => !(await receiver.wellknown())[hash]);
    // Still known by hash for conversations under way.
    expect(await receiver.document(hash)).toBe(echoProtocol());
  });
});
