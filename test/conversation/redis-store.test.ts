import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, RedisConversationStore, RedisMemory, type RedisStoreOptions } from '../../src/conversation/redis.js';
import { createClock, describeStoreContract, incrementTurn, sampleRecord, TTL_MS } from './store-contract.js';

const url = process.env.AGORA_TEST_REDIS_URL;
const describeRedis = url ? describe : describe.skip;
const title = url ? 'Redis backends' : 'Redis backends (skipped: set AGORA_TEST_REDIS_URL=redis://127.0.0.1:6379/0, or source .ci/redis.sh)';

describeRedis(title, () => {
  // Every key of this run lives under one prefix, removed at the end.
  const runPrefix = `agora-test:${randomUUID()}:`;
  let sequence = 0;
  const freshPrefix = () => `${runPrefix}${(sequence += 1)}:`;
  let shared: Redis;
  const connections: Redis[] = [];

  /** A connection of its own, as a second process would have. */
  const connect = () => {
    const redis = new Redis(url ?? '');
    connections.push(redis);
    return redis;
  };

  beforeAll(() => {
    shared = connect();
  });

  afterAll(async () => {
    let cursor = '0';
    do {
      const [next, keys] = await shared.scan(cursor, 'MATCH', `${runPrefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await shared.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    await Promise.all(connections.map((redis) => redis.quit()));
  });

  describeStoreContract('RedisConversationStore', (clock, { tombstoneMs }) =>
    new RedisConversationStore(shared, { prefix: freshPrefix(), now: clock.now, tombstoneMs }),
  );

  describe('RedisConversationStore', () => {
    const setUp = async (options: RedisStoreOptions = {}) => {
      const prefix = freshPrefix();
      const clock = createClock();
      const record = sampleRecord(clock.now());
      const store = new RedisConversationStore(shared, { prefix, now: clock.now, ...options });
      await store.create(record);
      return { prefix, clock, record, store, lock: `${prefix}lock:${record.id}` };
    };

    it('serializes turns across two processes: 40 increments split over two connections end at 40', async () => {
      const { prefix, clock, record, store } = await setUp();
      const other = new RedisConversationStore(connect(), { prefix, now: clock.now });
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, index) =>
          (index % 2 === 0 ? store : other).runTurn(record.id, TTL_MS, (current) => incrementTurn(current, () => delay(1))),
        ),
      );
      expect(new Set(results).size).toBe(40);
      const saved = await other.get(record.id);
      expect(saved.state).toEqual({ counter: 40 });
      expect(saved.turn).toBe(41);
    });

    it('takes the turn once a crashed holder’s lease runs out', async () => {
      const { record, store, lock } = await setUp({ lockTtlMs: 300 });
      await shared.set(lock, 'crashed-process', 'PX', 300);
      const started = performance.now();
      expect(await store.runTurn(record.id, TTL_MS, (current) => incrementTurn(current))).toBe(1);
      expect(performance.now() - started).toBeGreaterThanOrEqual(200);
      expect(await shared.exists(lock)).toBe(0);
    });

    it('gives up with REQUEST_TIMEOUT "Conversation busy" after lockWaitMs', async () => {
      const { record, store, lock } = await setUp({ lockWaitMs: 100 });
      await shared.set(lock, 'someone-else', 'PX', 10_000);
      let ran = false;
      await expect(
        store.runTurn(record.id, TTL_MS, async (current) => {
          ran = true;
          return incrementTurn(current);
        }),
      ).rejects.toMatchObject({ code: 'REQUEST_TIMEOUT', message: 'Conversation busy' });
      expect(ran).toBe(false);
      expect(await shared.get(lock)).toBe('someone-else');
    });

    it('renews the lease while a turn outlasts it, so no other process gets in', async () => {
      const { prefix, clock, record, store } = await setUp({ lockTtlMs: 120 });
      const other = new RedisConversationStore(connect(), { prefix, now: clock.now, lockTtlMs: 120, lockWaitMs: 250 });
      const long = store.runTurn(record.id, TTL_MS, (current) => incrementTurn(current, () => delay(450)));
      await delay(50);
      await expect(other.runTurn(record.id, TTL_MS, (current) => incrementTurn(current))).rejects.toMatchObject({
        code: 'REQUEST_TIMEOUT',
      });
      expect(await long).toBe(1);
      expect((await other.get(record.id)).state).toEqual({ counter: 1 });
    });

    it('refuses to save when another token took the lock during the turn (fencing)', async () => {
      const { record, store, lock } = await setUp();
      await expect(
        store.runTurn(record.id, TTL_MS, async (current) => {
          await shared.set(lock, 'intruder', 'PX', 10_000);
          return incrementTurn(current);
        }),
      ).rejects.toMatchObject({ code: 'INTERNAL', message: 'Conversation lock lost' });
      expect(await store.get(record.id)).toEqual(record);
      // The release compares tokens: the intruder's lock stays.
      expect(await shared.get(lock)).toBe('intruder');
    });

    it('leaves collection to Redis TTLs: the record outlives its expiry by the tombstone period, a deleted one leaves a tombstone', async () => {
      const tombstoneMs = 2 * TTL_MS;
      const { prefix, record, store } = await setUp({ tombstoneMs });
      const recordTtl = await shared.pttl(`${prefix}conversation:${record.id}`);
      expect(recordTtl).toBeGreaterThan(TTL_MS + tombstoneMs - 1_000);
      expect(recordTtl).toBeLessThanOrEqual(TTL_MS + tombstoneMs);
      await store.delete(record.id);
      expect(await shared.exists(`${prefix}conversation:${record.id}`)).toBe(0);
      expect(await shared.pttl(`${prefix}tombstone:${record.id}`)).toBeGreaterThan(tombstoneMs - 1_000);
    });

    it('answers CONVERSATION_NOT_FOUND once Redis has dropped the tombstone', async () => {
      const { prefix, record, store } = await setUp();
      await store.delete(record.id);
      await shared.del(`${prefix}tombstone:${record.id}`);
      await expect(store.get(record.id)).rejects.toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
    });

    it('closes a connection it opened from a URL, and leaves a shared one open', async () => {
      const owned = new RedisConversationStore(url ?? '', { prefix: freshPrefix() });
      expect(await owned.count()).toBe(0);
      await owned.close();
      await expect(owned.count()).rejects.toThrow();
      const borrowed = new RedisConversationStore(shared, { prefix: freshPrefix() });
      await borrowed.close();
      expect(await shared.ping()).toBe('PONG');
    });
  });

  describe('RedisMemory', () => {
    it('stores JSON values under checked keys', async () => {
      const memory = new RedisMemory(shared, { prefix: freshPrefix() });
      expect(await memory.get('documents/abc')).toBeUndefined();
      const value = { text: 'PD', sources: ['https://example.org/pd.md'], verdict: null, count: 2 };
      await memory.set('documents/abc', value);
      expect(await memory.get('documents/abc')).toEqual(value);
      await memory.delete('documents/abc');
      expect(await memory.get('documents/abc')).toBeUndefined();
      await expect(memory.set('../escape', 1)).rejects.toThrow('Invalid memory key');
    });

    it('lists keys under a prefix, sorted', async () => {
      const memory = new RedisMemory(shared, { prefix: freshPrefix() });
      for (const key of ['documents/b', 'documents/a', 'documents/nested/c', 'verdicts/a', 'docs']) await memory.set(key, true);
      expect(await memory.keys('documents/')).toEqual(['documents/a', 'documents/b', 'documents/nested/c']);
      expect(await memory.keys('doc')).toEqual(['docs', 'documents/a', 'documents/b', 'documents/nested/c']);
      expect(await memory.keys('missing/')).toEqual([]);
    });

    it('increments atomically across processes: 100 parallel increments over two connections make 100', async () => {
      const prefix = freshPrefix();
      const first = new RedisMemory(shared, { prefix });
      const second = new RedisMemory(connect(), { prefix });
      const values = await Promise.all(Array.from({ length: 100 }, (_, index) => (index % 2 === 0 ? first : second).increment('usage/calls')));
      expect(new Set(values).size).toBe(100);
      expect(await first.get('usage/calls')).toBe(100);
      expect(await second.increment('usage/calls', 5)).toBe(105);
    });

    it('counts a non-number as 0 and adds fractions, like FileMemory', async () => {
      const memory = new RedisMemory(shared, { prefix: freshPrefix() });
      await memory.set('usage/text', 'not a number');
      expect(await memory.increment('usage/text')).toBe(1);
      expect(await memory.increment('usage/text', 0.5)).toBe(1.5);
      expect(await memory.increment('usage/text')).toBe(2.5);
      expect(await memory.get('usage/text')).toBe(2.5);
    });
  });

  it('connectRedis shares one connection between the store and the memory, and closes it', async () => {
    const prefix = freshPrefix();
    const { store, memory, redis, close } = connectRedis(url ?? '', { prefix });
    await store.create(sampleRecord(Date.now()));
    await memory.set('approvals/x', true);
    expect(await store.count()).toBe(1);
    expect(await shared.get(`${prefix}memory:approvals/x`)).toBe('true');
    await close();
    await expect(redis.ping()).rejects.toThrow('Connection is closed');
  });
});
