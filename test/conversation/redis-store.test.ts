import { describe, expect, it } from 'vitest';
import { useTestRedis } from '../helpers/redis.js';
import {
  connectRedis,
  RedisConversationStore,
  type LockTimers,
  type RedisStoreOptions,
} from '../../src/conversation/redis.js';
import { createClock, describeStoreContract, incrementTurn, sampleRecord, TTL_MS } from './store-contract.js';

const url = process.env.AGORA_TEST_REDIS_URL;
const describeRedis = url ? describe : describe.skip;
const title = url
  ? 'Redis backends'
  : 'Redis backends (skipped: set AGORA_TEST_REDIS_URL=redis://127.0.0.1:6379/0, or source .ci/redis.sh)';

/**
 * The lock's real-time waits on a clock the test owns: a sleep moves the clock at once (then runs `onSleep`, so the
 * test can act as time passes), and lease renewals tick only when the test calls `renew()`.
 */
function fakeTimers(onSleep: (now: number) => Promise<unknown> = async () => undefined) {
  let now = 0;
  const ticks = new Set<() => Promise<unknown>>();
  const periods: number[] = [];
  const timers: LockTimers = {
    now: () => now,
    async sleep(ms) {
      now += ms;
      await onSleep(now);
    },
    every(ms, tick) {
      periods.push(ms);
      ticks.add(tick);
      return () => ticks.delete(tick);
    },
  };
  return {
    timers,
    now: () => now,
    periods,
    renew: () => Promise.all([...ticks].map((tick) => tick())),
    renewing: () => ticks.size,
  };
}

describeRedis(title, () => {
  const { shared, connect, freshPrefix } = useTestRedis(url ?? '');

  describeStoreContract(
    'RedisConversationStore',
    (clock, { tombstoneMs }) =>
      new RedisConversationStore(shared, { prefix: freshPrefix(), now: clock.now, tombstoneMs }),
  );

  describe('RedisConversationStore', () => {
    const setUp = async (options: RedisStoreOptions = {}) => {
      const prefix = freshPrefix();
      const clock = createClock();
      const record = sampleRecord(clock.now());
      const store = new RedisConversationStore(shared, { prefix, now: clock.now, ...options });
      await store.create(record);
      return { prefix, clock, record, store, lock: `${prefix}lock:{${record.id}}` };
    };

    it('serializes turns across two processes: 40 increments split over two connections end at 40', async () => {
      const { prefix, clock, record, store } = await setUp();
      const other = new RedisConversationStore(connect(), { prefix, now: clock.now });
      // A Redis round trip inside each turn, so the other connection's attempts land while a turn is under way.
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, index) =>
          (index % 2 === 0 ? store : other).runTurn(record.id, TTL_MS, (current) =>
            incrementTurn(current, () => shared.ping()),
          ),
        ),
      );
      expect(new Set(results).size).toBe(40);
      const saved = await other.get(record.id);
      expect(saved.state).toEqual({ counter: 40 });
      expect(saved.turn).toBe(41);
    });

    it('takes the turn once a crashed holder’s lease runs out', async () => {
      let lock = '';
      // Redis drops the crashed holder's lock once its 300 ms lease has run out on the store's clock.
      const time = fakeTimers(async (now) => (now >= 300 ? shared.del(lock) : undefined));
      const set = await setUp({ lockTtlMs: 300, timers: time.timers });
      const { record, store } = set;
      lock = set.lock;
      await shared.set(lock, 'crashed-process', 'PX', 10_000);
      expect(await store.runTurn(record.id, TTL_MS, (current) => incrementTurn(current))).toBe(1);
      // It waited for the lease instead of taking the lock from under its holder.
      expect(time.now()).toBeGreaterThanOrEqual(200);
      expect(await shared.exists(lock)).toBe(0);
    });

    it('gives up with REQUEST_TIMEOUT "Conversation busy" after lockWaitMs', async () => {
      const time = fakeTimers();
      const { record, store, lock } = await setUp({ lockWaitMs: 100, timers: time.timers });
      await shared.set(lock, 'someone-else', 'PX', 10_000);
      let ran = false;
      await expect(
        store.runTurn(record.id, TTL_MS, async (current) => {
          ran = true;
          return incrementTurn(current);
        }),
      ).rejects.toMatchObject({ code: 'REQUEST_TIMEOUT', message: 'Conversation busy' });
      expect(ran).toBe(false);
      expect(time.now()).toBe(100);
      expect(await shared.get(lock)).toBe('someone-else');
    });

    it('renews the lease while a turn outlasts it, so no other process gets in', async () => {
      const holder = fakeTimers();
      const { prefix, clock, record, store, lock } = await setUp({ lockTtlMs: 9_000, timers: holder.timers });
      const other = new RedisConversationStore(connect(), {
        prefix,
        now: clock.now,
        lockTtlMs: 9_000,
        lockWaitMs: 250,
        timers: fakeTimers().timers,
      });
      let started!: () => void;
      const inside = new Promise<void>((resolve) => (started = resolve));
      let finish!: () => void;
      const finished = new Promise<void>((resolve) => (finish = resolve));
      const long = store.runTurn(record.id, TTL_MS, (current) => {
        started();
        return incrementTurn(current, () => finished);
      });
      await inside;
      // Renewed three times a lease; a lease about to run out gets a whole one again.
      expect(holder.periods).toEqual([3_000]);
      await shared.pexpire(lock, 1_000);
      await holder.renew();
      expect(await shared.pttl(lock)).toBeGreaterThan(1_000);
      await expect(other.runTurn(record.id, TTL_MS, (current) => incrementTurn(current))).rejects.toMatchObject({
        code: 'REQUEST_TIMEOUT',
      });
      finish();
      expect(await long).toBe(1);
      expect(holder.renewing()).toBe(0);
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
      const recordTtl = await shared.pttl(`${prefix}conversation:{${record.id}}`);
      expect(recordTtl).toBeGreaterThan(TTL_MS + tombstoneMs - 1_000);
      expect(recordTtl).toBeLessThanOrEqual(TTL_MS + tombstoneMs);
      await store.delete(record.id);
      expect(await shared.exists(`${prefix}conversation:{${record.id}}`)).toBe(0);
      expect(await shared.pttl(`${prefix}tombstone:{${record.id}}`)).toBeGreaterThan(tombstoneMs - 1_000);
    });

    it('prunes its index as it goes: each write drops up to 32 expired ids, with no sweep', async () => {
      const { prefix, clock, store } = await setUp();
      for (let index = 0; index < 70; index += 1) await store.create(sampleRecord(clock.now(), `old-${index}`));
      expect(await shared.zcard(`${prefix}conversations`)).toBe(71);
      clock.advance(TTL_MS);
      const fresh = sampleRecord(clock.now());
      await store.create(fresh);
      expect(await shared.zcard(`${prefix}conversations`)).toBe(71 + 1 - 32);
      await store.runTurn(fresh.id, TTL_MS, (current) => incrementTurn(current));
      await store.create(sampleRecord(clock.now()));
      expect(await shared.zcard(`${prefix}conversations`)).toBe(2);
      expect(await store.count()).toBe(2);
    });

    it('answers CONVERSATION_NOT_FOUND once Redis has dropped the tombstone', async () => {
      const { prefix, record, store } = await setUp();
      await store.delete(record.id);
      await shared.del(`${prefix}tombstone:{${record.id}}`);
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
