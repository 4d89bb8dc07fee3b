import { describe, expect, it } from 'vitest';
import { MemoryConversationStore } from '../../src/conversation/store.js';
import { ConversationCapacity } from '../../src/receiver/capacity.js';
import { createClock, describeStoreContract, sampleRecord, TTL_MS } from './store-contract.js';

describeStoreContract(
  'MemoryConversationStore',
  (clock, { tombstoneMs }) => new MemoryConversationStore({ now: clock.now, tombstoneMs, sweepIntervalMs: 0 }),
);

describe('MemoryConversationStore', () => {
  it('forgets a tombstone within an eighth of the tombstone period after it ends', async () => {
    const clock = createClock();
    const store = new MemoryConversationStore({ now: clock.now, tombstoneMs: TTL_MS, sweepIntervalMs: 0 });
    const record = sampleRecord(clock.now());
    await store.create(record);
    clock.advance(TTL_MS);
    expect(await store.sweep()).toBe(1);
    expect(store.tombstones().count).toBe(1);
    clock.advance(TTL_MS - 1);
    expect(await store.sweep()).toBe(0);
    await expect(store.get(record.id)).rejects.toMatchObject({ code: 'CONVERSATION_EXPIRED' });
    clock.advance(TTL_MS / 8 + 1);
    expect(await store.sweep()).toBe(1);
    expect(store.tombstones().count).toBe(0);
    await expect(store.get(record.id)).rejects.toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
    await store.close();
  });

  it('sweeps in slices: 20,000 conversations expiring at one instant are all buried, the live ones kept, the counts exact', async () => {
    const clock = createClock();
    const store = new MemoryConversationStore({ now: clock.now, tombstoneMs: TTL_MS, sweepIntervalMs: 0 });
    const expiring = Array.from({ length: 20_000 }, (_, index) => sampleRecord(clock.now(), `old-${index}`));
    for (const record of expiring) await store.create(record);
    clock.advance(TTL_MS / 2);
    const kept = Array.from({ length: 100 }, (_, index) => ({
      ...sampleRecord(clock.now(), `new-${index}`),
      protocolHash: null,
    }));
    for (const record of kept) await store.create(record);
    expect(await store.count()).toBe(20_100);
    clock.advance(TTL_MS / 2);
    expect(await store.count()).toBe(100);
    // Slices let the event loop turn: a timer set now fires before the sweep is done.
    let turned = false;
    setImmediate(() => (turned = true));
    const sweeping = store.sweep();
    expect(store.sweep()).toBe(sweeping);
    expect(await sweeping).toBe(20_000);
    expect(turned).toBe(true);
    expect(await store.count()).toBe(100);
    expect(await store.countByProtocol()).toEqual(new Map([[null, 100]]));
    expect(store.tombstones().count).toBe(20_000);
    await expect(store.get('old-19999')).rejects.toMatchObject({ code: 'CONVERSATION_EXPIRED' });
    await expect(store.get('old-20000')).rejects.toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
    await store.close();
  });

  it('moves a conversation in the expiry order at each turn: an old instant coming due buries nothing', async () => {
    const clock = createClock();
    const store = new MemoryConversationStore({ now: clock.now, tombstoneMs: TTL_MS, sweepIntervalMs: 0 });
    const record = sampleRecord(clock.now());
    await store.create(record);
    clock.advance(TTL_MS - 1);
    await store.runTurn(record.id, TTL_MS, async (current) => ({
      result: 1,
      state: current.state,
      history: current.history,
    }));
    clock.advance(1);
    expect(await store.sweep()).toBe(0);
    expect(await store.count()).toBe(1);
    clock.advance(TTL_MS - 1);
    expect(await store.sweep()).toBe(1);
    expect(await store.count()).toBe(0);
    await store.close();
  });

  it('keeps tombstones compact: a million take a few tens of MB of tables, dropped a generation at a time', async () => {
    const clock = createClock();
    const store = new MemoryConversationStore({ now: clock.now, tombstoneMs: TTL_MS, sweepIntervalMs: 0 });
    for (let index = 0; index < 200_000; index += 1)
      await store.create({ ...sampleRecord(clock.now(), `c${index}`), history: [], state: {} });
    clock.advance(TTL_MS);
    expect(await store.sweep()).toBe(200_000);
    const { count, bytes } = store.tombstones();
    expect(count).toBe(200_000);
    // Two 32-bit words a slot, at most half full: no more than 32 bytes a tombstone.
    expect(bytes / count).toBeLessThanOrEqual(32);
    clock.advance(TTL_MS + TTL_MS / 8);
    expect(await store.sweep()).toBe(200_000);
    expect(store.tombstones()).toEqual({ count: 0, bytes: 0 });
    await store.close();
  });

  it('reserves places against its counter: the cap holds under concurrency, and expiry gives places back', async () => {
    const clock = createClock();
    const store = new MemoryConversationStore({ now: clock.now, tombstoneMs: TTL_MS, sweepIntervalMs: 0 });
    const capacity = new ConversationCapacity(3, store);
    await store.create(sampleRecord(clock.now(), 'first'));
    const places = Array.from({ length: 10 }, () => capacity.reserve());
    expect(places.filter((place) => place !== false)).toHaveLength(2);
    for (const [index, place] of places.entries()) {
      if (typeof place !== 'function') continue;
      await store.create(sampleRecord(clock.now(), `placed-${index}`));
      place();
      place();
    }
    expect(capacity.reserve()).toBe(false);
    clock.advance(TTL_MS);
    // No sweep ran: the reservation buries what is due on its way and finds the store empty.
    const again = Array.from({ length: 5 }, () => capacity.reserve());
    expect(again.filter((place) => place !== false)).toHaveLength(3);
    expect(await store.count()).toBe(0);
    await store.close();
  });
});
