import { afterAll, describe, expect, it } from 'vitest';
import { MemoryReplayGuard, type ReplayGuard } from '../../../src/bindings/roar/replay.js';
import { RedisReplayGuard } from '../../../src/bindings/roar/replay-redis.js';

const redisUrl = process.env.AGORA_TEST_REDIS_URL;

function contract(name: string, make: (now: () => number) => ReplayGuard[], realClock = false) {
  describe(name, () => {
    const guards: ReplayGuard[] = [];
    afterAll(async () => Promise.all(guards.map((guard) => guard.close())));
    it('accepts an id once and refuses it again within the window, from either user', async () => {
      let now = 1_000_000;
      const [one, two] = make(() => now);
      guards.push(one!, two!);
      const id = `m-${Math.random().toString(36).slice(2)}`;
      expect(await one!.firstSeen(id, 600_000)).toBe(true);
      expect(await one!.firstSeen(id, 600_000)).toBe(false);
      expect(await two!.firstSeen(id, 600_000)).toBe(false);
      expect(await two!.firstSeen(`${id}-other`, 600_000)).toBe(true);
      if (!realClock) {
        now += 600_001;
        expect(await one!.firstSeen(id, 600_000)).toBe(true);
      }
    });
  });
}

contract('MemoryReplayGuard', (now) => {
  const shared = new MemoryReplayGuard({ now });
  return [shared, shared];
});

describe('MemoryReplayGuard bounds', () => {
  it('forgets the oldest ids past its cap', async () => {
    const guard = new MemoryReplayGuard({ maxEntries: 2, now: () => 0 });
    expect(await guard.firstSeen('a', 1000)).toBe(true);
    expect(await guard.firstSeen('b', 1000)).toBe(true);
    expect(await guard.firstSeen('c', 1000)).toBe(true);
    expect(await guard.firstSeen('a', 1000)).toBe(true);
    expect(await guard.firstSeen('c', 1000)).toBe(false);
  });
});

if (redisUrl) {
  contract(
    'RedisReplayGuard, two processes on one Redis',
    () => [new RedisReplayGuard(redisUrl), new RedisReplayGuard(redisUrl)],
    true,
  );
} else {
  it.skip('RedisReplayGuard (skipped: set AGORA_TEST_REDIS_URL=redis://127.0.0.1:6379/0)', () => {});
}

describe('RedisReplayGuard during a Redis outage', () => {
  it('refuses with STORE_UNAVAILABLE while Redis is down, and the face answers 503 store_unavailable, then recovers', async () => {
    const { ownRedisServer } = await import('../../helpers/redis-server.js');
    const { makeFaces } = await import('../../faces/_helpers.js');
    const redis = await ownRedisServer();
    const guard = new RedisReplayGuard(redis.url);
    try {
      expect(await guard.firstSeen('a', 60_000)).toBe(true);
      const faces = makeFaces({ replay: guard });
      const did = (await faces.identity()).did;
      await redis.stop();
      await expect(guard.firstSeen('b', 60_000)).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      const message = JSON.stringify({
        roar: '1.0',
        id: 'c',
        from: { did: 'did:roar:agent:peer-0123456789abcdef' },
        to: { did },
        intent: 'ask',
        payload: { task: 'hi' },
      });
      const response = (await faces.handle({
        method: 'POST',
        path: '/roar/message',
        headers: {},
        body: Buffer.from(message),
      }))!;
      expect([response.status, JSON.parse(response.body as string), response.headers['retry-after']]).toEqual([
        503,
        { error: 'store_unavailable', message: 'Store unavailable' },
        '2',
      ]);
      await redis.start();
      await expect.poll(() => guard.firstSeen('d', 60_000).catch(() => false), { timeout: 10_000 }).toBe(true);
    } finally {
      await guard.close();
      await redis.stop();
    }
  });
});
