// One function opens the stores a store URL names, for agents and for hubs alike.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isSharedStore, openStores, parseStoreUrl } from '../../src/agent/stores.js';
import { FileMemory } from '../../src/memory/file.js';
import { MemoryConversationStore } from '../../src/conversation/store.js';
import { useTestRedis } from '../helpers/redis.js';

const REDIS_URL = process.env.AGORA_TEST_REDIS_URL;

describe('parseStoreUrl', () => {
  it('reads memory, and a Redis URL with the store options of its query (the rest left for ioredis)', () => {
    expect(parseStoreUrl('memory')).toEqual({ kind: 'memory' });
    expect(parseStoreUrl('redis://127.0.0.1:6379/0?prefix=shop:&lockTtlMs=5000&family=6')).toEqual({
      kind: 'redis',
      url: 'redis://127.0.0.1:6379/0?family=6',
      options: { prefix: 'shop:', lockTtlMs: 5000 },
    });
    expect(parseStoreUrl('rediss://h:6380/1?tombstoneMs=1')).toMatchObject({ url: 'rediss://h:6380/1' });
    expect(isSharedStore('redis://h/0')).toBe(true);
    expect(isSharedStore('memory')).toBe(false);
  });

  it('refuses anything else with a `store:` error that never echoes a URL', () => {
    expect(() => parseStoreUrl('postgres://x')).toThrow(
      'store: must be "memory" or a redis://, redis-cluster:// or redis-sentinel:// URL, got "postgres://x"',
    );
    expect(() => parseStoreUrl('redis://:secret@[bad')).toThrow(/^store: not a valid redis:\/\/ URL$/);
    expect(() => parseStoreUrl('redis://h/0?prefix=')).toThrow('store: prefix must not be empty');
    expect(() => parseStoreUrl('redis://h/0?lockWaitMs=0')).toThrow(
      'store: lockWaitMs must be a positive integer of milliseconds, got "0"',
    );
  });
});

describe('openStores in memory', () => {
  const dirs: string[] = [];
  afterAll(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

  it("gives an agent its folder's memory (or its own, and its conversation store), a hub nothing", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'agora-stores-'));
    dirs.push(dir);
    const agent = await openStores('memory', { role: 'agent', dir });
    expect([agent.kind, agent.conversations, agent.shared, agent.replay]).toEqual([
      'memory',
      undefined,
      undefined,
      undefined,
    ]);
    expect(agent.memory).toBeInstanceOf(FileMemory);
    const conversations = new MemoryConversationStore();
    const memory = new FileMemory(join(dir, 'other'));
    const given = await openStores(conversations, { role: 'agent', dir, memory });
    expect(given.conversations).toBe(conversations);
    expect(given.memory).toBe(memory);
    const hub = await openStores('memory', { role: 'hub' });
    expect([hub.kind, hub.hub, hub.rooms, hub.shared]).toEqual(['memory', undefined, undefined, undefined]);
    await Promise.all([agent.close(), given.close(), hub.close()]);
  });

  it("refuses an agent's store options in a hub's URL", async () => {
    await expect(openStores('redis://127.0.0.1:1/0?lockTtlMs=5', { role: 'hub' })).rejects.toThrow(
      "store: lockTtlMs is an option of an agent's store, not a hub's",
    );
  });
});

describe.skipIf(!REDIS_URL)('openStores on Redis', () => {
  const redis = useTestRedis(REDIS_URL!);

  it('opens an agent and a hub on one URL, each under its prefix, sharing a connection for rate limits', async () => {
    const prefix = redis.freshPrefix();
    const agent = await openStores(`${REDIS_URL}?prefix=${prefix}a:`, { role: 'agent', dir: '/nonexistent' });
    const hub = await openStores(`${REDIS_URL}?prefix=${prefix}h:`, { role: 'hub' });
    try {
      expect(agent.kind).toBe('redis');
      expect(agent.shared?.prefix).toBe(`${prefix}a:`);
      expect(agent.replay).toBeDefined();
      await agent.memory.set('k', { v: 1 });
      expect(await redis.shared.keys(`${prefix}a:*`)).not.toHaveLength(0);
      expect(hub.kind).toBe('redis');
      expect(hub.shared?.prefix).toBe(`${prefix}h:`);
      expect(await hub.hub!.version()).toBe(0);
      expect(await hub.rooms!.get('none')).toBeUndefined();
    } finally {
      await agent.close();
      await hub.hub?.close();
      await hub.close();
    }
  });

  it('fails clearly, naming the address, when Redis does not answer', async () => {
    await expect(openStores('redis://127.0.0.1:1/0', { role: 'hub' })).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: expect.stringContaining('127.0.0.1:1'),
    });
  }, 20_000);
});
