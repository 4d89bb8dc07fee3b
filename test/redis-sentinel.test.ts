// The Redis backends on a master watched by a Sentinel (started here): the store contracts, and a client that
// follows the replica the Sentinel promotes when the master is SIGKILLed, with every acknowledged turn kept.
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quit, type RedisClient } from '../src/_redis.js';
import { openRedis } from '../src/_redis-connection.js';
import { RedisConversationStore } from '../src/conversation/redis.js';
import { RedisMemory } from '../src/memory/redis.js';
import { describeStoreContract, sampleRecord, TTL_MS } from './conversation/store-contract.js';
import { describeMemoryContract } from './memory/memory-contract.js';
import { missingRedis, startSentinel } from './helpers/redis-topology.js';

const missing = missingRedis();
const describeSentinel = missing ? describe.skip : describe;
const title = missing ? `Redis Sentinel (skipped: ${missing})` : 'Redis Sentinel';

describeSentinel(title, () => {
  let sentinel: Awaited<ReturnType<typeof startSentinel>>;
  let redis: RedisClient;
  const opened: RedisClient[] = [];
  const run = randomUUID();
  let sequence = 0;
  const freshPrefix = () => `agora-test:${run}:${(sequence += 1)}:`;
  const open = (query = '') => {
    const connection = openRedis(`${sentinel.url}${query}`);
    opened.push(connection);
    return connection;
  };

  beforeAll(async () => {
    sentinel = await startSentinel();
    // The contracts test what is stored, not how fast replicas acknowledge: the longest WAIT a URL may ask for, so a
    // loaded machine's slow acknowledgement is not taken for a failure.
    redis = open('?waitMs=1500');
  }, 60_000);
  afterAll(async () => {
    await Promise.all(opened.map((connection) => quit(connection)));
    await sentinel?.stop();
  }, 30_000);

  describeStoreContract(
    'RedisConversationStore behind a Sentinel',
    (clock, { tombstoneMs }) =>
      new RedisConversationStore(redis, { prefix: freshPrefix(), now: clock.now, tombstoneMs }),
  );
  describeMemoryContract('RedisMemory behind a Sentinel', () => new RedisMemory(redis, { prefix: freshPrefix() }));

  it('follows the promoted replica when the master is SIGKILLed, keeping every acknowledged turn', async () => {
    const prefix = freshPrefix();
    const options = { prefix, lockTtlMs: 2000, lockWaitMs: 3000 };
    const agents = [new RedisConversationStore(open(), options), new RedisConversationStore(open(), options)];
    const id = `sentinel-${randomUUID()}`;
    await agents[0]!.create({ ...sampleRecord(Date.now(), id), history: [] });
    const acknowledged: string[] = [];
    let refused = 0;
    let slowestMs = 0;
    const turn = async (index: number) => {
      const started = performance.now();
      try {
        await agents[index % 2]!.runTurn(id, TTL_MS, async (record) => ({
          result: undefined,
          state: record.state,
          history: [...record.history, { role: 'peer', body: `#${index}` }],
        }));
        acknowledged.push(`#${index}`);
      } catch (error) {
        expect((error as { code?: string }).code).toMatch(/STORE_UNAVAILABLE|REQUEST_TIMEOUT|INTERNAL/);
        refused += 1;
        await delay(100);
      } finally {
        slowestMs = Math.max(slowestMs, performance.now() - started);
      }
    };
    let index = 0;
    for (; acknowledged.length < 50; index += 1) await turn(index);
    await sentinel.killMaster();
    const promoted = sentinel.promoted();
    const deadline = Date.now() + 30_000;
    for (; acknowledged.length < 100 && Date.now() < deadline; index += 1) await turn(index);
    await promoted;
    expect(acknowledged.length).toBe(100);
    const kept = (await new RedisConversationStore(open(), { prefix }).get(id)).history.map((message) => message.body);
    console.info(
      `sentinel failover: ${acknowledged.length} acknowledged, ${refused} refused, slowest ${Math.round(slowestMs)} ms`,
    );
    expect(acknowledged.filter((body) => !kept.includes(body))).toEqual([]);
    expect(refused).toBeGreaterThan(0);
    expect(slowestMs).toBeLessThan(3000 + 3 * 2000);
  }, 60_000);
});
