// Room watchers over SSE speak ARP's frames, as the WebSocket does: `hello` with the heartbeat interval first, then
// the room's events as ARP frames (their SSE id the event id), `heartbeat` when nothing came; HubClient.watch (and
// so `agora room watch`) reads them back as the room's events.
import { afterEach, describe, expect, it } from 'vitest';
import { HubClient } from '../../../src/hub/client.js';
import { roomsMount } from '../../../src/hub/rooms/http.js';
import type { RoomEvent } from '../../../src/hub/rooms/records.js';
import { Rooms } from '../../../src/hub/rooms/rooms.js';
import { startHub } from '../../../src/hub/server.js';
import { silentLogger } from '../../../src/log.js';
import { readSse } from '../../helpers/sse.js';
import { startSilentParticipant } from './_agents.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function heldOpenParticipants(): Promise<string[]> {
  const [first, second] = [await startSilentParticipant(), await startSilentParticipant()];
  cleanups.push(first.close, second.close);
  return [first.url, second.url];
}

describe('room SSE watchers', () => {
  it("open with hello and the heartbeat interval, then send ARP's frames that HubClient.watch reads back", async () => {
    const running = await startHub({ port: 0, tickMs: 0, allowPrivateAgents: true, logger: silentLogger });
    cleanups.push(() => running.close());
    const room = await running.rooms!.create({
      topic: 'frames',
      participants: await heldOpenParticipants(),
      pattern: 'round-robin',
      maxTurns: 12,
      turnTimeoutMs: 120_000,
    });
    await running.rooms!.say(room.id, 'hello all', 'ana');

    const response = await fetch(`${running.url}/rooms/${room.id}/events`);
    const frames: { id?: string; event: string; data: Record<string, any> }[] = [];
    for await (const event of readSse(response)) {
      if (event.comment !== undefined) continue;
      frames.push({ ...(event.id ? { id: event.id } : {}), event: event.event, data: JSON.parse(event.data) });
      if (event.event === 'new_message') break;
    }
    expect(frames[0]).toEqual({ event: 'hello', data: { type: 'hello', flowId: room.id, heartbeatInterval: 30_000 } });
    const said = frames.find((frame) => frame.event === 'new_message')!;
    expect(said.data).toMatchObject({
      type: 'new_message',
      flowId: room.id,
      eventId: Number(said.id),
      message: { agentName: 'ana', content: 'hello all', kind: 'person' },
    });
    expect(frames.some((frame) => frame.event === 'flow_state' && frame.data.state === 'active')).toBe(true);

    const client = new HubClient({ url: running.url });
    const controller = new AbortController();
    const watched: RoomEvent[] = [];
    for await (const event of client.watch(room.id, { signal: controller.signal })) {
      watched.push(event);
      if (event.type === 'new_message') {
        controller.abort();
        break;
      }
    }
    expect(watched.find((event) => event.type === 'state')).toMatchObject({ data: { state: 'active' } });
    expect(watched.at(-1)).toMatchObject({
      type: 'new_message',
      data: { speaker: 'ana', text: 'hello all', kind: 'person' },
    });
    // The same events the store holds, whole.
    const stored = await running.rooms!.store.events(room.id, 0);
    expect(watched).toEqual(stored.slice(0, watched.length));
  });

  it('sends a heartbeat frame when nothing came for the heartbeat interval', async () => {
    const rooms = new Rooms({
      resolve: async (target) => ({ name: target, url: target }),
      logger: silentLogger,
      sweepMs: 0,
    });
    cleanups.push(() => rooms.close());
    const room = await rooms.create({
      topic: 'quiet',
      participants: await heldOpenParticipants(),
      pattern: 'round-robin',
      maxTurns: 12,
      turnTimeoutMs: 120_000,
    });
    const mount = roomsMount(rooms, { socketHeartbeatMs: 20 });
    const response = await mount.handle({
      method: 'GET',
      path: `/rooms/${room.id}/events`,
      headers: {},
      body: undefined,
      remoteAddress: '127.0.0.1',
    });
    if (response?.events === undefined) throw new Error('not a stream');
    const frames = response.events.frames;
    const seen: string[] = [];
    for (;;) {
      const next = await frames.next();
      if (next.done) break;
      const name = /event: (\S+)/.exec(next.value)![1]!;
      seen.push(name);
      if (name === 'heartbeat') break;
    }
    response.events.cancel();
    expect(seen[0]).toBe('hello');
    expect(seen.at(-1)).toBe('heartbeat');
  });
});
