import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll } from 'vitest';

/**
 * Connections to the test Redis for one test file: every key lives under one run prefix, removed (and every
 * connection closed) after the file's tests. Call inside the file's describe.
 */
export function useTestRedis(url: string) {
  const runPrefix = `agora-test:${randomUUID()}:`;
  let sequence = 0;
  const connections: Redis[] = [];
  /** A connection of its own, as a second process would have. */
  const connect = () => {
    // Lazy: a skipped describe still builds its body, and must open no socket.
    const redis = new Redis(url, { lazyConnect: true });
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
  return { shared, connect, freshPrefix: () => `${runPrefix}${(sequence += 1)}:` };
}
