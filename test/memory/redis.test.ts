import { describe, expect, it } from 'vitest';
import { useTestRedis } from '../helpers/redis.js';
import { RedisMemory } from '../../src/memory/redis.js';
import { describeMemoryContract } from './memory-contract.js';

const url = process.env.AGORA_TEST_REDIS_URL;
const describeRedis = url ? describe : describe.skip;
const title = url
  ? 'RedisMemory'
  : 'RedisMemory (skipped: set AGORA_TEST_REDIS_URL=redis://127.0.0.1:6379/0, or source .ci/redis.sh)';

describeRedis(title, () => {
  const { shared, connect, freshPrefix } = useTestRedis(url ?? '');

  describeMemoryContract('RedisMemory', () => new RedisMemory(shared, { prefix: freshPrefix() }));

  it('lists keys under any prefix, not only a folder', async () => {
    const memory = new RedisMemory(shared, { prefix: freshPrefix() });
    for (const key of ['documents/b', 'documents/a', 'documents/nested/c', 'verdicts/a', 'docs'])
      await memory.set(key, true);
    expect(await memory.keys('doc')).toEqual(['docs', 'documents/a', 'documents/b', 'documents/nested/c']);
  });

  it('increments atomically across processes: 100 parallel increments over two connections make 100', async () => {
    const prefix = freshPrefix();
    const first = new RedisMemory(shared, { prefix });
    const second = new RedisMemory(connect(), { prefix });
    const values = await Promise.all(
      Array.from({ length: 100 }, (_, index) => (index % 2 === 0 ? first : second).increment('usage/calls')),
    );
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
