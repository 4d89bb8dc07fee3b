import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import { storeCall } from '../../src/_redis-connection.js';
import { startAgent, type RunningAgent } from '../../src/agent.js';
import { hashText } from '../../src/protocol/document.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';
import { runCli } from '../helpers/cli.js';
import { ownRedisServer } from '../helpers/redis-server.js';
import { watchedLogger } from '../helpers/watched-logger.js';
import { call, failureOf } from '../agora/_fixtures.js';

const COUNTER_PD =
  '---\nname: Counter\ndescription: Adds numbers over turns.\nmultiround: true\n---\nThe sender sends {"add": number}; the receiver replies {"total": number}.\n';
const COUNTER_ROUTINE = `
export default async function (body: { add: number }, context: any) {
  context.conversation.state.total = ((context.conversation.state.total as number | undefined) ?? 0) + body.add;
  return { total: context.conversation.state.total };
}
`;

describe('a Redis outage', () => {
  let redis: Awaited<ReturnType<typeof ownRedisServer>>;
  let agent: RunningAgent;
  let folder: Awaited<ReturnType<typeof makeAgentFolder>>;
  const log = watchedLogger();
  const consoleError = vi.spyOn(console, 'error');
  const hash = hashText(COUNTER_PD);

  beforeAll(async () => {
    redis = await ownRedisServer();
    folder = await makeAgentFolder({ 'protocols/counter.md': COUNTER_PD, 'routines/counter.ts': COUNTER_ROUTINE });
    agent = await startAgent({
      dir: folder.dir,
      port: 0,
      llm: null,
      store: redis.url,
      logger: log.logger,
      watch: false,
    });
  });
  afterAll(async () => {
    await agent?.close();
    await redis?.stop();
    await folder?.cleanup();
    consoleError.mockRestore();
  });

  it('answers 503 Store unavailable with Retry-After, says degraded at /ready, stays live at /health, and recovers by itself', async () => {
    const first = await call(agent.url, 'POST', '/', { protocolHash: hash, body: { add: 2 }, multiround: true });
    const id = (first.json as { conversationId: string }).conversationId;
    expect((await call(agent.url, 'GET', '/ready')).status).toBe(200);

    const lost = log.next(/unavailable/);
    await redis.stop();
    await lost;
    const followUp = await call(agent.url, 'POST', `/conversations/${id}`, { body: { add: 1 } });
    expect(followUp.status).toBe(503);
    expect(followUp.json).toEqual(failureOf('Store unavailable'));
    expect(followUp.headers.get('retry-after')).toBe('2');
    const fresh = await call(agent.url, 'POST', '/', { protocolHash: hash, body: { add: 1 }, multiround: true });
    expect(fresh.status).toBe(503);
    expect((await call(agent.url, 'DELETE', `/conversations/${id}`)).status).toBe(503);
    const ready = await call(agent.url, 'GET', '/ready');
    expect(ready.status).toBe(503);
    expect(ready.json).toEqual({ status: 'degraded', store: 'unavailable' });
    expect((await call(agent.url, 'GET', '/health')).status).toBe(200);
    // Single-round queries need no store and keep being answered.
    expect((await call(agent.url, 'POST', '/', { protocolHash: hash, body: { add: 5 } })).json).toMatchObject({
      status: 'success',
      body: { total: 5 },
    });

    const back = log.next(/reconnected/);
    await redis.start();
    await back;
    expect((await call(agent.url, 'GET', '/ready')).status).toBe(200);
    const again = await call(agent.url, 'POST', '/', { protocolHash: hash, body: { add: 3 }, multiround: true });
    expect(again.json).toMatchObject({ status: 'success', body: { total: 3 } });
    // This test's Redis keeps nothing across a restart (no AOF): the old conversation is gone, and says so.
    expect((await call(agent.url, 'POST', `/conversations/${id}`, { body: { add: 1 } })).json).toEqual(
      failureOf('Conversation not found'),
    );

    expect(log.lines.filter((line) => line.includes('unavailable'))).toHaveLength(1);
    expect(consoleError.mock.calls.flat().join(' ')).not.toContain('Unhandled error event');
  });
});

/** A counter agent on a Redis server of its own (which its tests pause), started before the tests of a block. */
function counterAgentOnOwnRedis(): { redis: Awaited<ReturnType<typeof ownRedisServer>>; agent: RunningAgent } {
  const setup = {} as { redis: Awaited<ReturnType<typeof ownRedisServer>>; agent: RunningAgent };
  let folder: Awaited<ReturnType<typeof makeAgentFolder>> | undefined;
  beforeAll(async () => {
    setup.redis = await ownRedisServer();
    folder = await makeAgentFolder({ 'protocols/counter.md': COUNTER_PD, 'routines/counter.ts': COUNTER_ROUTINE });
    setup.agent = await startAgent({
      dir: folder.dir,
      port: 0,
      llm: null,
      store: setup.redis.url,
      logger: watchedLogger().logger,
      watch: false,
    });
  });
  afterAll(async () => {
    setup.redis?.resume();
    await setup.agent?.close();
    await setup.redis?.stop();
    await folder?.cleanup();
  });
  return setup;
}

describe('a Redis that stops answering', () => {
  const setup = counterAgentOnOwnRedis();
  const hash = hashText(COUNTER_PD);

  it('fails a command to a Redis that stopped answering after the command timeout, with 503', async () => {
    const first = await call(setup.agent.url, 'POST', '/', { protocolHash: hash, body: { add: 1 }, multiround: true });
    const id = (first.json as { conversationId: string }).conversationId;
    setup.redis.pause();
    try {
      const followUp = await call(setup.agent.url, 'POST', `/conversations/${id}`, { body: { add: 1 } });
      expect(followUp.status).toBe(503);
      expect(followUp.json).toEqual(failureOf('Store unavailable'));
    } finally {
      setup.redis.resume();
    }
    // (The timed-out lock request may still run once Redis resumes: that conversation waits out the lock's lease.)
    expect(
      (await call(setup.agent.url, 'POST', '/', { protocolHash: hash, body: { add: 4 }, multiround: true })).json,
    ).toMatchObject({ status: 'success', body: { total: 4 } });
  });
});

describe('a new conversation while Redis stops answering', () => {
  const setup = counterAgentOnOwnRedis();
  const hash = hashText(COUNTER_PD);

  it('fails a store call Redis never answers with STORE_UNAVAILABLE at the command timeout, whatever ioredis holds back', async () => {
    const client = new Redis(setup.redis.url, { lazyConnect: true });
    await expect(storeCall(client, () => new Promise<never>(() => undefined), 50)).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
    });
    client.disconnect();
  });

  it('answers new multiround queries 503 Store unavailable, then opens conversations again once Redis is back', async () => {
    // Warm: the agent has talked to this Redis (its connection is up, not connecting).
    const warm = await call(setup.agent.url, 'POST', '/', { protocolHash: hash, body: { add: 1 }, multiround: true });
    expect(warm.status).toBe(200);
    setup.redis.pause();
    try {
      // A burst of new conversations: each is refused on its own (with auto-pipelining, the later ones used to wait
      // for the first one's command timeout before their own began).
      const burst = await Promise.all(
        [2, 3, 4, 5, 6].map((add) =>
          call(setup.agent.url, 'POST', '/', { protocolHash: hash, body: { add }, multiround: true }),
        ),
      );
      for (const fresh of burst) {
        expect(fresh.status).toBe(503);
        expect(fresh.json).toEqual(failureOf('Store unavailable'));
      }
    } finally {
      setup.redis.resume();
    }
    await vi.waitFor(
      async () => {
        const again = await call(setup.agent.url, 'POST', '/', {
          protocolHash: hash,
          body: { add: 4 },
          multiround: true,
        });
        expect(again.json).toMatchObject({ status: 'success', body: { total: 4 } });
        const id = (again.json as { conversationId: string }).conversationId;
        expect((await call(setup.agent.url, 'POST', `/conversations/${id}`, { body: { add: 1 } })).json).toMatchObject({
          status: 'success',
          body: { total: 5 },
        });
      },
      { timeout: 15_000, interval: 200 },
    );
  }, 30_000);
});

describe('starting against an unreachable Redis', () => {
  it('prints one line naming the address and exits non-zero', async () => {
    const folder = await makeAgentFolder({});
    try {
      const result = await runCli(['serve', folder.dir, '--port', '0', '--store', 'redis://127.0.0.1:1/0'], {
        env: { ANTHROPIC_API_KEY: '' },
        timeoutMs: 20_000,
      });
      expect(result.code).toBe(1);
      const lines = result.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^agora serve: Redis unreachable at 127\.0\.0\.1:1: /);
      expect(result.stdout).toBe('');
    } finally {
      await folder.cleanup();
    }
  });
});
