import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisMemory } from '../../src/memory/redis.js';
import { describeMemoryContract } from './memory-contract.js';

const url = process.env.AGORA_TEST_REDIS_URL;
const describeRedis = url ? describe : describe.skip;
const title = url ? 'RedisMemory' : 'RedisMemory (skipped: set AGORA_TEST_REDIS_URL=redis://127.0.0.1:6379/0, or source .ci/redis.sh)';

describeRedis(title, () => {
  // Every key of this run lives under one prefix, removed at the end.
  const runPrefix = `agora-test:${randomUUID()}:`;
  let sequence = 0;
  const freshPrefix = () => `${runPrefix}${(sequence += 1)}:`;
  const connections: Redis[] = [];
  /** A connection of its own, as a second process would have. */
  const connect = () => {
    const redis = new Redis(url ?? '');
    connections.push(redis);
    return redis;
  };
  const shared = connect();

  afterAll(async () => {
    let cursor = '0';
    do {
      const [next, keys] = await shared.scan(cursor, 'MATCH', `${runPrefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await shared.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    await Promise.all(connections.map((redis) => redis.quit()));
  });

  describeMemoryContract('RedisMemory', () => new RedisMemory(shared, { prefix: freshPrefix() }));

  it('lists keys under any prefix, not only a folder', async () => {
    const memory = new RedisMemory(shared, { prefix: freshPrefix() });
    for (const key of ['documents/b', 'documents/a', 'documents/nested/c', 'verdicts/a', 'docs']) await memory.set(key, true);
    expect(await memory.keys('doc')).toEqual(['docs', 'documents/a', 'documents/b', 'documents/nested/c']);
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

  it('closes a connection it opened from a URL, and leaves a shared one open', async () => {
    const owned = new RedisMemory(url ?? '', { prefix: freshPrefix() });
    await owned.set('values/a', 1);
    await owned.close();
    await expect(owned.get('values/a')).rejects.toThrow();
    const borrowed = new RedisMemory(shared, { prefix: freshPrefix() });
    await borrowed.close();
    expect(await shared.ping()).toBe('PONG');
  });
});
