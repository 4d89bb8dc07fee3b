// A hub on Redis while Redis is down: its API answers 503 Store unavailable at once (it waited on ioredis's
// retries before, and printed unhandled error stacks), the outage is reported once, and it recovers by itself.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RedisHubStore } from '../../src/hub/redis-store.js';
import { startHub, type RunningHub } from '../../src/hub/server.js';
import { ownRedisServer } from '../helpers/redis-server.js';
import { watchedLogger } from '../helpers/watched-logger.js';

describe('a hub on Redis during an outage', () => {
  let redis: Awaited<ReturnType<typeof ownRedisServer>>;
  let hub: RunningHub;
  const { logger, lines, next } = watchedLogger();
  const consoleError = vi.spyOn(console, 'error');

  beforeAll(async () => {
    redis = await ownRedisServer();
    hub = await startHub({ port: 0, logger, rooms: false, store: new RedisHubStore(redis.url, { logger }) });
  });
  afterAll(async () => {
    await hub?.close();
    await redis?.stop();
    consoleError.mockRestore();
  });

  it('answers 503 Store unavailable at once, reports the outage once, and recovers by itself', async () => {
    expect((await fetch(`${hub.url}/agents`)).status).toBe(200);
    const lost = next(/unavailable/);
    await redis.stop();
    await lost;
    for (const path of ['/agents', '/protocols', '/metrics']) {
      const started = performance.now();
      const response = await fetch(`${hub.url}${path}`);
      expect([path, response.status, await response.json()]).toEqual([
        path,
        503,
        { status: 'failure', error: 'Store unavailable' },
      ]);
      // Refused while the connection is known down, not after a command timeout or retries.
      expect(performance.now() - started).toBeLessThan(1000);
    }
    expect((await fetch(`${hub.url}/health`)).status).toBe(200);
    const back = next(/reconnected/);
    await redis.start();
    await back;
    expect((await fetch(`${hub.url}/agents`)).status).toBe(200);
    expect(lines.filter((line) => /unavailable \(/.test(line))).toHaveLength(1);
    expect(lines.filter((line) => line.startsWith('error'))).toEqual([]);
    expect(consoleError.mock.calls.map((call) => String(call[0]))).not.toContainEqual(
      expect.stringContaining('Unhandled error event'),
    );
  });
});
