// One function opens the stores a store URL names, for agents and for hubs alike.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isSharedStore, openStores, parseStoreUrl } from '../../src/agent/stores.js';
import { parseRedisTarget } from '../../src/_redis-target.js';
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

  it('reads cluster and Sentinel URLs, their credentials, and what a write waits for (1 replica by default there)', () => {
    const cluster = 'redis-cluster://u:p%40ss@10.0.0.1:7000,10.0.0.2?prefix=shop:';
    expect(parseStoreUrl(cluster)).toMatchObject({ url: 'redis-cluster://u:p%40ss@10.0.0.1:7000,10.0.0.2' });
    expect(parseRedisTarget('redis-cluster://u:p%40ss@10.0.0.1:7000,[::1]')).toMatchObject({
      kind: 'cluster',
      username: 'u',
      password: 'p@ss',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '::1', port: 6379 },
      ],
      waitReplicas: 1,
      waitMs: 500,
    });
    expect(parseRedisTarget('rediss-sentinel://s1,s2:26380/main/2?waitReplicas=0&sentinelPassword=x')).toMatchObject({
      kind: 'sentinel',
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26380 },
      ],
      name: 'main',
      db: 2,
      tls: {},
      waitReplicas: 0,
      extra: { sentinelPassword: 'x' },
    });
    expect(parseRedisTarget('redis://h/0?waitMs=100')).toMatchObject({
      kind: 'single',
      url: 'redis://h/0',
      waitReplicas: 0,
    });
    expect(isSharedStore('rediss-cluster://h')).toBe(true);
  });

  it('refuses bad cluster and Sentinel URLs, wait bounds and CA files with a `store:` error', () => {
    expect(() => parseStoreUrl('redis-sentinel://h:1')).toThrow('store: a Sentinel URL ends with /<master name>[/db]');
    expect(() => parseStoreUrl('redis-cluster://h:1/3')).toThrow('store: a cluster URL has no path');
    expect(() => parseStoreUrl('redis-cluster://h:99999')).toThrow('store: port must be an integer from 1 to 65535');
    expect(() => parseStoreUrl('redis://h/0?waitMs=5000')).toThrow('store: waitMs must be an integer from 1 to 1500');
    expect(() => parseStoreUrl('redis://h/0?waitReplicas=-1')).toThrow('store: waitReplicas must be an integer');
    expect(() => parseStoreUrl('redis://h/0?ca=/x.pem')).toThrow('store: ca needs a TLS URL (rediss://…)');
    expect(() => parseStoreUrl('rediss://h/0?ca=/nonexistent.pem')).toThrow(
      'store: cannot read the CA file "/nonexistent.pem": ENOENT',
    );
    expect(() => parseStoreUrl('redis-cluster://h?prefix=a{b}')).toThrow('store: prefix must not hold { or }');
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
