import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../../src/_files.js';
import { hashText } from '../../src/protocol/document.js';
import { encodeDataUri } from '../../src/protocol/sources.js';
import { eventually, makeAgentFolder } from '../helpers/agent-folder.js';
import { startServe } from '../helpers/cli.js';
import { useTestRedis } from '../helpers/redis.js';

const redisUrl = process.env.AGORA_TEST_REDIS_URL;
const describeRedis = redisUrl ? describe : describe.skip;
const title = redisUrl
  ? 'agora serve, several processes on one Redis'
  : 'agora serve, several processes on one Redis (skipped: set AGORA_TEST_REDIS_URL=redis://127.0.0.1:6379/0, or source .ci/redis.sh)';

const NO_KEY = { ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: '' };

const COUNTER_PD =
  '---\nname: Counter\ndescription: Adds numbers over turns.\nmultiround: true\n---\nThe sender sends JSON {"add": number}; the receiver replies JSON {"count": number}.\n';

// Reads the state, awaits (so turns overlap unless the store serializes them), then writes it back: a lost
// update shows as a repeated or missing count. `marker` names a file written once the turn is under way.
const COUNTER_ROUTINE = `
import { writeFile } from 'node:fs/promises';
export default async function (body: { add?: number; pauseMs?: number; marker?: string }, context: any) {
  const state = context.conversation.state;
  const before = typeof state.count === 'number' ? state.count : 0;
  if (body.marker) await writeFile(body.marker, String(process.pid));
  await new Promise((resolve) => setTimeout(resolve, body.pauseMs ?? 5));
  state.count = before + (body.add ?? 1);
  return { count: state.count, pid: process.pid };
}
`;

const COUNTER_HASH = hashText(COUNTER_PD);

type Reply = {
  status: string;
  body?: { count: number; pid: number };
  error?: string;
  conversationId?: string;
  conversationExpires?: number;
};

async function post(url: string, path: string, body: unknown): Promise<{ status: number; reply: Reply }> {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, reply: (await response.json()) as Reply };
}

const start = (url: string, body: unknown = { add: 0 }) =>
  post(url, '/', { protocolHash: COUNTER_HASH, multiround: true, body });
const turn = (url: string, id: string, body: unknown = { add: 1 }) => post(url, `/conversations/${id}`, { body });

/** A turn whose request is known to be written out (`sent`) before it is answered or lost (`settled`). */
function sendTurn(
  url: string,
  id: string,
  body: unknown,
): { sent: Promise<void>; settled: Promise<'answered' | 'lost'> } {
  let sent!: () => void;
  const written = new Promise<void>((resolve) => (sent = resolve));
  const settled = new Promise<'answered' | 'lost'>((resolve) => {
    const outgoing = request(
      `${url}/conversations/${id}`,
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      (response) => {
        response.resume();
        response.on('end', () => resolve('answered'));
        response.on('error', () => resolve('lost'));
        response.on('close', () => resolve('lost')); // after 'end' this changes nothing
      },
    );
    outgoing.on('finish', sent);
    outgoing.on('error', () => {
      sent();
      resolve('lost');
    });
    outgoing.end(JSON.stringify({ body }));
  });
  return { sent: written, settled };
}

const SHIFTED_CLOCK = fileURLToPath(new URL('../helpers/shifted-clock.mjs', import.meta.url));

describeRedis(title, () => {
  // Each test's keys live under their own prefix below the file's, removed at the end.
  const { freshPrefix } = useTestRedis(redisUrl ?? '');
  const cleanups: (() => Promise<unknown>)[] = [];

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** Two `agora serve` processes on one agent folder and one Redis key prefix (options go in the store URL). */
  async function startPair(
    storeOptions: Record<string, string> = {},
    serveArgs: string[] = [],
    env: NodeJS.ProcessEnv = {},
  ) {
    const folder = await makeAgentFolder({
      'protocols/counter.md': COUNTER_PD,
      'routines/counter.ts': COUNTER_ROUTINE,
    });
    cleanups.push(folder.cleanup);
    const store = new URL(redisUrl ?? '');
    store.searchParams.set('prefix', freshPrefix());
    for (const [name, value] of Object.entries(storeOptions)) store.searchParams.set(name, value);
    const args = [folder.dir, '--port', '0', '--store', store.href, ...serveArgs];
    const [a, b] = await Promise.all([
      startServe(args, { env: { ...NO_KEY, ...env } }),
      startServe(args, { env: { ...NO_KEY, ...env } }),
    ]);
    cleanups.push(
      () => a.stop('SIGKILL'),
      () => b.stop('SIGKILL'),
    );
    return { folder, a, b };
  }

  it('carries a conversation from one process to the other, sliding its expiry, and both see it expire', async () => {
    // Both processes read one clock the test moves (a preloaded Date.now that adds the offset in `clockFile`).
    const clockDir = await mkdtemp(join(tmpdir(), 'agora-clock-'));
    cleanups.push(() => rm(clockDir, { recursive: true, force: true }));
    const clockFile = join(clockDir, 'offset');
    let offset = 0;
    const advance = (ms: number) => writeFileAtomic(clockFile, String((offset += ms)));
    await advance(0);
    const { a, b } = await startPair({}, ['--conversation-ttl', '3'], {
      AGORA_TEST_CLOCK_FILE: clockFile,
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${SHIFTED_CLOCK}`.trim(),
    });

    const first = await start(a.url, { add: 5 });
    expect(first.reply).toMatchObject({ status: 'success', body: { count: 5 } });
    const id = first.reply.conversationId!;
    expect(id).toMatch(/^[\w-]{21,}$/);

    await advance(1700);
    const second = await turn(b.url, id, { add: 2 });
    expect(second.reply).toMatchObject({ status: 'success', body: { count: 7 }, conversationId: id });
    expect(second.reply.body!.pid).not.toBe(first.reply.body!.pid);
    expect(second.reply.conversationExpires!).toBeGreaterThan(first.reply.conversationExpires!);

    // Past the first turn's expiry: only the slide saved by the other process keeps the conversation alive.
    await advance(1700);
    const third = await turn(a.url, id, { add: 3 });
    expect(third.reply).toMatchObject({ status: 'success', body: { count: 10 }, conversationId: id });
    expect(third.reply.conversationExpires!).toBeGreaterThan(second.reply.conversationExpires!);

    await advance(3300);
    for (const url of [a.url, b.url]) {
      expect(await turn(url, id)).toEqual({ status: 200, reply: { status: 'failure', error: 'Conversation expired' } });
    }
  });

  it('loses no update when 60 concurrent turns are spread over both processes', async () => {
    const { a, b } = await startPair();
    const id = (await start(a.url)).reply.conversationId!;

    const replies = await Promise.all(
      Array.from({ length: 60 }, (_, index) => turn(index % 2 === 0 ? a.url : b.url, id)),
    );

    for (const { status, reply } of replies)
      expect({ status, reply: reply.status }).toEqual({ status: 200, reply: 'success' });
    const counts = replies.map(({ reply }) => reply.body!.count).sort((x, y) => x - y);
    expect(counts).toEqual(Array.from({ length: 60 }, (_, index) => index + 1));
    expect(new Set(replies.map(({ reply }) => reply.body!.pid)).size).toBe(2);
    expect((await turn(b.url, id, { add: 0 })).reply.body!.count).toBe(60);
  });

  it('carries on without the process killed mid-turn: acknowledged turns kept, its lease expires', async () => {
    // A short lease, so the dead process's lock is reclaimed quickly; a lock wait of 10 s, far below the default
    // 60 s, so the survivors only succeed if the dead lease was reclaimed well before that.
    const { folder, a, b } = await startPair({ lockTtlMs: '1000', lockWaitMs: '10000' });
    const id = (await start(a.url)).reply.conversationId!;
    const acknowledged: number[] = [];
    for (let index = 0; index < 6; index++) {
      const { reply } = await turn(index % 2 === 0 ? a.url : b.url, id);
      expect(reply.status).toBe('success');
      acknowledged.push(reply.body!.count);
    }

    // Long turns in flight to `a`; kill it once the first is inside the routine, holding the conversation's lease.
    const marker = join(folder.dir, 'turn-started');
    // Settled at once, so their failures are never unhandled rejections.
    const doomed = [sendTurn(a.url, id, { add: 1, pauseMs: 3000, marker })];
    await eventually(() => existsSync(marker), 15_000);
    // More turns queued behind it in the same process, their requests written out before the kill.
    doomed.push(...Array.from({ length: 3 }, () => sendTurn(a.url, id, { add: 1, pauseMs: 3000 })));
    await Promise.all(doomed.map(({ sent }) => sent));
    await a.stop('SIGKILL');
    expect(await Promise.all(doomed.map(({ settled }) => settled))).toEqual(['lost', 'lost', 'lost', 'lost']);

    const survivors = await Promise.all(Array.from({ length: 4 }, () => turn(b.url, id)));
    for (const { reply } of survivors) {
      expect(reply).toMatchObject({ status: 'success', conversationId: id });
      acknowledged.push(reply.body!.count);
    }

    const final = (await turn(b.url, id, { add: 0 })).reply;
    expect(final.status).toBe('success');
    const count = final.body!.count;
    // Every acknowledged turn saw a distinct count and is in the total; the killed turns were never saved.
    expect(new Set(acknowledged).size).toBe(acknowledged.length);
    expect(Math.max(...acknowledged)).toBe(count);
    expect(count).toBe(acknowledged.length);
  });

  it("stores and serves a stranger's document it will not answer in neither process", async () => {
    const { a, b } = await startPair();
    const text = `---\nname: Learned ${randomUUID()}\ndescription: Only a peer knows it.\nmultiround: false\n---\nThe sender sends any JSON.\n`;
    const hash = hashText(text);

    // Without an LLM the agent cannot answer a PD it has no routine for: it does not keep the document either.
    const query = await post(a.url, '/', { protocolHash: hash, protocolSources: [encodeDataUri(text)], body: {} });
    expect(query).toEqual({ status: 200, reply: { status: 'failure', error: 'Unsupported protocol' } });

    for (const url of [b.url, a.url]) expect((await fetch(`${url}/protocols/${hash}`)).status).toBe(404);
  });
});
