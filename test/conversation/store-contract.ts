import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ConversationRecord, ConversationStore, TurnUpdate } from '../../src/conversation/store.js';

/** A clock the test moves by hand. */
export type TestClock = { now(): number; advance(ms: number): void };

/** Builds a fresh, empty store on the given clock (a unique key prefix for shared backends). */
export type StoreFactory = (
  clock: TestClock,
  options: { tombstoneMs: number },
) => ConversationStore | Promise<ConversationStore>;

/** The TTL every contract case uses, ms. */
export const TTL_MS = 60_000;
/** The tombstone period every contract store is built with, ms (two TTLs: the spec asks for at least one). */
export const TOMBSTONE_MS = 2 * TTL_MS;

/** A clock starting at a fixed Unix time. */
export function createClock(start = 1_750_000_000_000): TestClock {
  let time = start;
  return {
    now: () => time,
    advance: (ms) => {
      time += ms;
    },
  };
}

/** A conversation after its first turn, expiring one TTL from `now`. */
export function sampleRecord(now: number, id = `c-${randomUUID()}`): ConversationRecord {
  return {
    id,
    protocolHash: 'ab'.repeat(32),
    createdAt: now,
    expiresAt: now + TTL_MS,
    turn: 1,
    state: { counter: 0 },
    history: [
      { role: 'peer', body: 'hello' },
      { role: 'agent', body: { greeting: 'hi', nested: [1, null, true] } },
    ],
  };
}

/** A turn that adds one to `state.counter`, yielding in between so interleaved turns would lose updates. */
export async function incrementTurn(
  record: ConversationRecord,
  pause: () => Promise<unknown> = () => new Promise(setImmediate),
): Promise<TurnUpdate<number>> {
  const counter = record.state.counter as number;
  await pause();
  return { result: counter + 1, state: { ...record.state, counter: counter + 1 }, history: record.history };
}

/** Runs the behaviour every {@link ConversationStore} must have against the store the factory builds. */
export function describeStoreContract(name: string, factory: StoreFactory): void {
  describe(`${name} (ConversationStore contract)`, () => {
    let clock: TestClock;
    let store: ConversationStore;

    beforeEach(async () => {
      clock = createClock();
      store = await factory(clock, { tombstoneMs: TOMBSTONE_MS });
    });

    afterEach(async () => {
      await store.close();
    });

    it('returns a created conversation as it was saved', async () => {
      const record = sampleRecord(clock.now());
      await store.create(record);
      expect(await store.get(record.id)).toEqual(record);
    });

    it('hands out copies, so mutating a returned record changes nothing stored', async () => {
      const record = sampleRecord(clock.now());
      await store.create(record);
      const copy = await store.get(record.id);
      copy.state.counter = 99;
      record.state.counter = 98;
      expect((await store.get(record.id)).state).toEqual({ counter: 0 });
    });

    it('saves state and history of a turn, increments turn and slides the expiry', async () => {
      const record = sampleRecord(clock.now());
      await store.create(record);
      clock.advance(10_000);
      const history = [
        ...record.history,
        { role: 'peer' as const, body: 'again' },
        { role: 'agent' as const, body: 2 },
      ];
      const result = await store.runTurn(record.id, TTL_MS, async (current) => {
        expect(current).toEqual(record);
        return { result: 'answer', state: { counter: 1, note: 'x' }, history };
      });
      expect(result).toBe('answer');
      expect(await store.get(record.id)).toEqual({
        ...record,
        turn: 2,
        state: { counter: 1, note: 'x' },
        history,
        expiresAt: clock.now() + TTL_MS,
      });
    });

    it('keeps a conversation alive as long as turns come within the TTL', async () => {
      const record = sampleRecord(clock.now());
      await store.create(record);
      for (let index = 0; index < 3; index += 1) {
        clock.advance(TTL_MS - 1);
        await store.runTurn(record.id, TTL_MS, (current) => incrementTurn(current));
      }
      expect((await store.get(record.id)).state).toEqual({ counter: 3 });
    });

    it('saves nothing when the turn throws, and passes the error on', async () => {
      const record = sampleRecord(clock.now());
      await store.create(record);
      clock.advance(1_000);
      const failure = new Error('routine failed');
      await expect(
        store.runTurn(record.id, TTL_MS, async (current) => {
          current.state.counter = 5;
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(await store.get(record.id)).toEqual(record);
      // The lock is free again: the next turn runs.
      expect(await store.runTurn(record.id, TTL_MS, (current) => incrementTurn(current))).toBe(1);
    });

    it('answers CONVERSATION_EXPIRED once the clock passes the expiry', async () => {
      const record = sampleRecord(clock.now());
      await store.create(record);
      clock.advance(TTL_MS - 1);
      await expect(store.get(record.id)).resolves.toMatchObject({ id: record.id });
      clock.advance(1);
      await expect(store.get(record.id)).rejects.toMatchObject({ code: 'CONVERSATION_EXPIRED' });
      await expect(store.runTurn(record.id, TTL_MS, (current) => incrementTurn(current))).rejects.toMatchObject({
        code: 'CONVERSATION_EXPIRED',
      });
    });

    it('answers CONVERSATION_NOT_FOUND for an id it never knew', async () => {
      await expect(store.get('never-seen')).rejects.toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
      await expect(store.runTurn('never-seen', TTL_MS, (current) => incrementTurn(current))).rejects.toMatchObject({
        code: 'CONVERSATION_NOT_FOUND',
      });
      expect(await store.delete('never-seen')).toBe(false);
    });

    it('ends a deleted conversation, which then answers CONVERSATION_EXPIRED', async () => {
      const record = sampleRecord(clock.now());
      await store.create(record);
      expect(await store.delete(record.id)).toBe(true);
      expect(await store.delete(record.id)).toBe(false);
      await expect(store.get(record.id)).rejects.toMatchObject({ code: 'CONVERSATION_EXPIRED' });
      await expect(store.runTurn(record.id, TTL_MS, (current) => incrementTurn(current))).rejects.toMatchObject({
        code: 'CONVERSATION_EXPIRED',
      });
    });

    it('keeps answering CONVERSATION_EXPIRED throughout the tombstone period, sweeps notwithstanding', async () => {
      const expired = sampleRecord(clock.now());
      const deleted = sampleRecord(clock.now());
      await store.create(expired);
      await store.create(deleted);
      await store.delete(deleted.id);
      clock.advance(TTL_MS);
      await store.sweep();
      clock.advance(TOMBSTONE_MS - TTL_MS - 1);
      await store.sweep();
      await expect(store.get(expired.id)).rejects.toMatchObject({ code: 'CONVERSATION_EXPIRED' });
      await expect(store.get(deleted.id)).rejects.toMatchObject({ code: 'CONVERSATION_EXPIRED' });
    });

    it('counts live conversations only', async () => {
      expect(await store.count()).toBe(0);
      const first = sampleRecord(clock.now());
      await store.create(first);
      clock.advance(1_000);
      const second = sampleRecord(clock.now());
      const third = sampleRecord(clock.now());
      await store.create(second);
      await store.create(third);
      expect(await store.count()).toBe(3);
      await store.delete(third.id);
      expect(await store.count()).toBe(2);
      clock.advance(TTL_MS - 1_000);
      expect(await store.count()).toBe(1);
      clock.advance(1_000);
      expect(await store.count()).toBe(0);
    });

    it('sweeps expired conversations, returning how many it dropped, and keeps the live ones', async () => {
      const old = [sampleRecord(clock.now()), sampleRecord(clock.now())];
      for (const record of old) await store.create(record);
      clock.advance(TTL_MS / 2);
      const fresh = sampleRecord(clock.now());
      await store.create(fresh);
      clock.advance(TTL_MS / 2);
      expect(await store.count()).toBe(1);
      expect(await store.sweep()).toBe(2);
      expect(await store.sweep()).toBe(0);
      expect(await store.count()).toBe(1);
      expect(await store.get(fresh.id)).toEqual(fresh);
      for (const record of old)
        await expect(store.get(record.id)).rejects.toMatchObject({ code: 'CONVERSATION_EXPIRED' });
    });

    it('serializes concurrent turns of one conversation: 50 increments end at 50', async () => {
      const record = sampleRecord(clock.now());
      await store.create(record);
      let active = 0;
      let mostActive = 0;
      const results = await Promise.all(
        Array.from({ length: 50 }, () =>
          store.runTurn(record.id, TTL_MS, async (current) => {
            active += 1;
            mostActive = Math.max(mostActive, active);
            try {
              return await incrementTurn(current);
            } finally {
              active -= 1;
            }
          }),
        ),
      );
      expect(mostActive).toBe(1);
      expect([...results].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, index) => index + 1));
      const saved = await store.get(record.id);
      expect(saved.state).toEqual({ counter: 50 });
      expect(saved.turn).toBe(51);
    });

    it('runs turns of different conversations independently', async () => {
      const first = sampleRecord(clock.now());
      const second = sampleRecord(clock.now());
      await store.create(first);
      await store.create(second);
      let releaseFirst!: () => void;
      const firstTurn = store.runTurn(first.id, TTL_MS, (current) =>
        incrementTurn(current, () => new Promise<void>((resolve) => (releaseFirst = resolve))),
      );
      // The second conversation's turn completes while the first one is still held open.
      expect(await store.runTurn(second.id, TTL_MS, (current) => incrementTurn(current))).toBe(1);
      await expect.poll(() => releaseFirst).toBeDefined();
      releaseFirst();
      expect(await firstTurn).toBe(1);
    });

    it('does not bring back a conversation deleted while one of its turns ran', async () => {
      const record = sampleRecord(clock.now());
      await store.create(record);
      const result = await store.runTurn(record.id, TTL_MS, async (current) => {
        expect(await store.delete(record.id)).toBe(true);
        return incrementTurn(current);
      });
      expect(result).toBe(1);
      await expect(store.get(record.id)).rejects.toMatchObject({ code: 'CONVERSATION_EXPIRED' });
      expect(await store.count()).toBe(0);
    });
  });
}
