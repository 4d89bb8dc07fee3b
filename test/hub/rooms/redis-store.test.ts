import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisRoomStore } from '../../../src/hub/rooms/redis-store.js';
import { ownRedisServer } from '../../helpers/redis-server.js';

describe('RedisRoomStore events', () => {
  let redis: Awaited<ReturnType<typeof ownRedisServer>>;
  let store: RedisRoomStore;
  let probe: Redis;

  beforeAll(async () => {
    redis = await ownRedisServer();
    store = new RedisRoomStore({ url: redis.url, maxEventsPerRoom: 100 });
    probe = new Redis(redis.url);
  });
  afterAll(async () => {
    probe?.disconnect();
    await store?.close();
    await redis?.stop();
  });

  const sentBytes = async () => Number(/total_net_output_bytes:(\d+)/.exec(await probe.info('stats'))![1]);

  it('reads from the cursor: the events after it, right after a trim, and only those leave Redis', async () => {
    const text = 'x'.repeat(1000);
    for (let index = 1; index <= 150; index++)
      await store.append('r1', 'new_message', { turn: index, speaker: 'a', kind: 'agent', text });
    // 100 kept (ids 51 to 150): a cursor before them gets all of them, one inside them the rest.
    expect((await store.events('r1', 0)).map((event) => event.id)).toEqual(
      Array.from({ length: 100 }, (_, index) => index + 51),
    );
    expect((await store.events('r1', 140)).map((event) => event.id)).toEqual(
      Array.from({ length: 10 }, (_, index) => index + 141),
    );
    expect(await store.events('r1', 150)).toEqual([]);
    expect(await store.events('none', 0)).toEqual([]);
    expect((await store.events('r1', 149))[0]).toEqual({
      id: 150,
      type: 'new_message',
      data: { turn: 150, speaker: 'a', kind: 'agent', text },
    });

    // A watcher polling at the end of a 100 KB history: what Redis sends is the (empty) answers, not the history.
    const before = await sentBytes();
    for (let poll = 0; poll < 20; poll++) await store.events('r1', 150);
    const sent = (await sentBytes()) - before;
    expect(sent).toBeLessThan(20_000);
  });
});
