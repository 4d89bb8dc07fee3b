import { afterAll, describe, expect, it } from 'vitest';
import { MemoryReplayGuard, type ReplayGuard } from '../../../src/faces/roar/replay.js';
import { RedisReplayGuard } from '../../../src/faces/roar/replay-redis.js';

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
  contract('RedisReplayGuard, two processes on one Redis', () => [new RedisReplayGuard(redisUrl), new RedisReplayGuard(redisUrl)], true);
} else {
  it.skip('RedisReplayGuard (skipped: set AGORA_TEST_REDIS_URL=redis://127.0.0.1:6379/0)', () => {});
}
