import { describe, expect, it } from 'vitest';
import { MemoryConversationStore } from '../../src/conversation/store.js';
import { createClock, describeStoreContract, sampleRecord, TTL_MS } from './store-contract.js';

describeStoreContract('MemoryConversationStore', (clock, { tombstoneMs }) => new MemoryConversationStore({ now: clock.now, tombstoneMs, sweepIntervalMs: 0 }));

describe('MemoryConversationStore', () => {
  it('forgets a tombstone swept after the tombstone period', async () => {
    const clock = createClock();
    const store = new MemoryConversationStore({ now: clock.now, tombstoneMs: TTL_MS, sweepIntervalMs: 0 });
    const record = sampleRecord(clock.now());
    await store.create(record);
    clock.advance(TTL_MS);
    expect(await store.sweep()).toBe(1);
    clock.advance(TTL_MS);
    expect(await store.sweep()).toBe(1);
    await expect(store.get(record.id)).rejects.toMatchObject({ code: 'CONVERSATION_NOT_FOUND' });
    await store.close();
  });
});
