import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import type { RoomRecord } from '../../../src/hub/rooms/records.js';
import { startHubCommand } from '../../helpers/cli.js';
import { readRoomEvents, startParticipants } from './_agents.js';

const redisUrl = process.env.AGORA_TEST_REDIS_URL;
const describeRedis = redisUrl ? describe : describe.skip;

describeRedis('rooms across hub processes on Redis', () => {
  const prefix = `agora-test-rooms:${randomUUID()}:`;
  const children: ChildProcess[] = [];
  let participants: Awaited<ReturnType<typeof startParticipants>> | undefined;
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await participants?.close();
    const redis = new Redis(redisUrl ?? '');
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
  });

  it('resumes a room at the turn it was on after its hub is killed with SIGKILL: no turn lost or repeated', async () => {
    participants = await startParticipants(['steady', 'steady', 'steady']);
    const store = `${redisUrl}?prefix=${encodeURIComponent(prefix)}`;
    const first = await startHubCommand(['--store', store, '--allow-private-agents']);
    children.push(first.child);
    const created = await fetch(`${first.url}/rooms`, {
      method: 'POST',
      body: JSON.stringify({
        topic: 'survive a crash',
        participants: participants.agents.map((agent) => agent.url),
        maxTurns: 9,
        turnTimeoutMs: 1500,
      }),
    });
    const room = (await created.json()) as RoomRecord;
    const before = await readRoomEvents(first.url, room.id, {
      stop: (events) => events.filter((event) => event.type === 'new_message').length >= 3,
    });
    first.child.kill('SIGKILL');
    await new Promise((resolve) => first.child.once('exit', resolve));

    // A new hub process on the same Redis takes the room over once the dead one's lease runs out.
    const second = await startHubCommand(['--store', store, '--allow-private-agents']);
    children.push(second.child);
    const after = await readRoomEvents(second.url, room.id, {
      lastEventId: before.at(-1)!.id,
      stop: (events) => events.some((event) => event.type === 'flow_completed'),
    });
    const ids = [...before, ...after].map((event) => event.id);
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, index) => index + 1));
    const final = (await (await fetch(`${second.url}/rooms/${room.id}`)).json()) as RoomRecord;
    expect(final.state).toBe('completed');
    expect(final.transcript.map((entry) => entry.turn)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(final.transcript.every((entry) => entry.kind === 'agent')).toBe(true);
  }, 60_000);
});
