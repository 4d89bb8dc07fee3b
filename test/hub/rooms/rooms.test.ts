import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { RoomEvent, RoomRecord } from '../../../src/hub/rooms/records.js';
import { createHubDashboard, roomsSource } from '../../../src/dashboard/hub-dashboard.js';
import { startHub, type RunningHub } from '../../../src/hub/server.js';
import { silentLogger } from '../../../src/log.js';
import { readRoomEvents, startParticipants, type Mode } from './_agents.js';

let hub: RunningHub | undefined;
let participants: Awaited<ReturnType<typeof startParticipants>> | undefined;
afterEach(async () => {
  await hub?.close();
  await participants?.close();
  hub = undefined;
  participants = undefined;
});

async function setUp(modes: Mode[], tokens?: string[]) {
  participants = await startParticipants(modes);
  hub = await startHub({
    port: 0,
    tickMs: 0,
    allowPrivateAgents: true,
    logger: silentLogger,
    ...(tokens ? { tokens } : {}),
    mounts: (core, rooms) => [createHubDashboard(core, { checkMs: 20, rooms: roomsSource(rooms!) })],
  });
  return participants.agents.map((agent) => agent.url);
}

const headers = (token?: string) => ({
  'content-type': 'application/json',
  ...(token ? { authorization: `Bearer ${token}` } : {}),
});

async function post(path: string, body: unknown, token?: string): Promise<{ status: number; json: any }> {
  const response = await fetch(`${hub!.url}${path}`, {
    method: 'POST',
    headers: headers(token),
    body: JSON.stringify(body),
  });
  return { status: response.status, json: await response.json() };
}

const readEvents = (id: string, options: Parameters<typeof readRoomEvents>[2] = {}) =>
  readRoomEvents(hub!.url, id, options);

const ended = (events: RoomEvent[]) => events.some((event) => event.type === 'flow_completed');
const spoken = (room: RoomRecord) =>
  room.transcript.filter((entry) => entry.kind !== 'person').map((entry) => entry.speaker);

describe('rooms on the hub', () => {
  it('runs a round-robin room of 6 turns in order, each an Agora query under the room document', async () => {
    const urls = await setUp(['plain', 'plain', 'plain']);
    const created = await post('/rooms', { topic: 'a change to the parser', participants: urls, maxTurns: 6 });
    expect(created.status).toBe(201);
    const names = (created.json as RoomRecord).participants.map((participant) => participant.name);
    await readEvents(created.json.id, { stop: ended });
    const room = (await (await fetch(`${hub!.url}/rooms/${created.json.id}`)).json()) as RoomRecord;
    expect(room.state).toBe('completed');
    expect(room.endedBecause).toBe('6 turns taken');
    expect(spoken(room)).toEqual([...names, ...names]);
    expect(room.transcript[4]!.text).toBe(`${names[1]} at turn 5`);
    // The room document is in the hub's catalogue, so agents can fetch it by hash.
    const listing = (await (await fetch(`${hub!.url}/protocols?q=room`)).json()) as
      { name: string }[] | { protocols: { name: string }[] };
    expect(JSON.stringify(listing)).toContain('Agora room turn');
  });

  it('lets a moderated room’s lead pick the speakers and end with its synthesis', async () => {
    const urls = await setUp(['lead', 'plain', 'plain']);
    const created = await post('/rooms', {
      topic: 'release plan',
      participants: urls,
      pattern: 'moderated',
      lead: urls[0],
      maxTurns: 6,
    });
    const [lead, , last] = (created.json as RoomRecord).participants.map((participant) => participant.name);
    await readEvents(created.json.id, { stop: ended });
    const room = (await (await fetch(`${hub!.url}/rooms/${created.json.id}`)).json()) as RoomRecord;
    // The lead gives the floor to the last participant each time (its pick), and speaks between speakers.
    expect(spoken(room)).toEqual([lead, last, lead, last, lead, lead]);
    expect(room.transcript.at(-1)).toMatchObject({ kind: 'synthesis', speaker: lead, text: 'SYNTHESIS of 5 messages' });
    expect(room.state).toBe('completed');
  });

  it('routes a free-form room by @mentions', async () => {
    const urls = await setUp(['mention', 'plain', 'mention']);
    const created = await post('/rooms', { topic: 'naming', participants: urls, pattern: 'free-form', maxTurns: 4 });
    const names = (created.json as RoomRecord).participants.map((participant) => participant.name);
    await readEvents(created.json.id, { stop: ended });
    const room = (await (await fetch(`${hub!.url}/rooms/${created.json.id}`)).json()) as RoomRecord;
    // names[0] asks @names[2]; names[2] asks @names[1]; names[1] mentions nobody, so the order goes on to names[2].
    expect(spoken(room)).toEqual([names[0], names[2], names[1], names[2]]);
  });

  it('skips a participant that times out and drops it after three in a row', async () => {
    const urls = await setUp(['plain', 'slow']);
    const created = await post('/rooms', { topic: 'slow peers', participants: urls, maxTurns: 8, turnTimeoutMs: 300 });
    const events = await readEvents(created.json.id, { stop: ended });
    const room = (await (await fetch(`${hub!.url}/rooms/${created.json.id}`)).json()) as RoomRecord;
    const slow = room.participants[1]!;
    expect(slow.dropped).toBe(true);
    expect(room.transcript.filter((entry) => entry.kind === 'skipped')).toHaveLength(3);
    expect(events.find((event) => event.type === 'new_message' && event.data.dropped === true)?.data.speaker).toBe(
      slow.name,
    );
    // Once dropped it gets no more turns: the room goes on with the one left.
    expect(room.transcript.slice(-2).every((entry) => entry.speaker === room.participants[0]!.name)).toBe(true);
  });

  it('ends at its budget, and shows a person’s message to the next turn', async () => {
    const urls = await setUp(['plain', 'plain']);
    const created = await post('/rooms', { topic: 'costs', participants: urls, maxTurns: 50, budget: { tokens: 400 } });
    const id = created.json.id as string;
    const said = await post(`/rooms/${id}/messages`, { text: 'keep it short', from: 'ana' });
    expect(said.status).toBe(201);
    // While it runs, the hub dashboard shows it with its members and transcript.
    const state = (await (await fetch(`${hub!.url}/dashboard/api/state`)).json()) as {
      rooms: { name: string; members: string[]; transcript: { from: string; text: string }[] }[];
    };
    expect(state.rooms[0]!.name).toContain('costs (active');
    expect(state.rooms[0]!.members).toHaveLength(2);
    expect(
      state.rooms[0]!.transcript.some((line) => line.from === 'ana (person)' && line.text === 'keep it short'),
    ).toBe(true);
    await readEvents(id, { stop: ended });
    const room = (await (await fetch(`${hub!.url}/rooms/${id}`)).json()) as RoomRecord;
    expect(room.endedBecause).toBe('the budget of 400 tokens was spent');
    expect(room.turns).toBeLessThan(50);
    // The turn under way when the person spoke was asked before; every turn asked after it sees the message.
    const person = room.transcript.find((entry) => entry.kind === 'person')!;
    const later = room.transcript.filter((entry) => entry.kind === 'agent' && entry.turn >= person.turn + 2);
    expect(later.length).toBeGreaterThan(0);
    for (const entry of later) expect(entry.text).toContain('(heard: keep it short)');
  });

  it('pauses, resumes and cancels; refuses without the token; a watcher that reconnects loses and repeats nothing', async () => {
    const urls = await setUp(['plain', 'plain'], ['t0k']);
    expect((await post('/rooms', { topic: 'x', participants: urls })).status).toBe(401);
    expect((await post('/rooms', { topic: 'x', participants: urls, pattern: 'moderated' }, 't0k')).status).toBe(400);
    const created = await post('/rooms', { topic: 'control', participants: urls, maxTurns: 200 }, 't0k');
    const id = created.json.id as string;
    // Read the first few events, then reconnect from the last one seen.
    const first = await readEvents(id, { token: 't0k', stop: (events) => events.length >= 4 });
    const paused = await post(`/rooms/${id}/control`, { action: 'pause' }, 't0k');
    expect(paused.json.state).toBe('paused');
    const resumed = await post(`/rooms/${id}/control`, { action: 'resume' }, 't0k');
    expect(resumed.json.state).toBe('active');
    const cancelled = await post(`/rooms/${id}/control`, { action: 'cancel' }, 't0k');
    expect(cancelled.json.state).toBe('cancelled');
    const rest = await readEvents(id, { token: 't0k', lastEventId: first.at(-1)!.id, stop: ended });
    const ids = [...first, ...rest].map((event) => event.id);
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, index) => index + 1));
    expect(rest.at(-1)).toMatchObject({ type: 'flow_completed', data: { state: 'cancelled' } });
    expect((await post(`/rooms/${id}/control`, { action: 'resume' }, 't0k')).status).toBe(400);
    // The hub dashboard lists open rooms only: this one ended.
    const state = (await (
      await fetch(`${hub!.url}/dashboard/api/state`, { headers: { authorization: 'Bearer t0k' } })
    ).json()) as { rooms: { name: string }[] };
    expect(state.rooms).toEqual([]);
    expect(
      (
        await fetch(`${hub!.url}/rooms/${id}/events`, {
          headers: { authorization: 'Bearer t0k', 'last-event-id': 'x' },
        })
      ).status,
    ).toBe(400);
    expect((await fetch(`${hub!.url}/rooms/nope`, { headers: { authorization: 'Bearer t0k' } })).status).toBe(404);
  });

  it("streams a room over WebSocket in ARP's frames: hello first, heartbeats both ways, resumable by event id", async () => {
    const urls = await setUp(['steady', 'steady']);
    const created = await post('/rooms', { topic: 'sockets', participants: urls, maxTurns: 4 });
    const id = created.json.id as string;
    const ws = `${hub!.url.replace('http', 'ws')}/rooms/${id}/ws`;
    const read = (headers: Record<string, string>, stop: (frames: any[]) => boolean) =>
      new Promise<any[]>((resolve, reject) => {
        const socket = new WebSocket(ws, { headers });
        const frames: any[] = [];
        socket.on('message', (data) => {
          const frame = JSON.parse(String(data));
          frames.push(frame);
          if (frame.type === 'hello') socket.send(JSON.stringify({ type: 'heartbeat' }));
          if (stop(frames)) {
            socket.close();
            resolve(frames);
          }
        });
        socket.on('error', reject);
      });
    const first = await read(
      {},
      (frames) =>
        frames.filter((frame) => frame.type === 'new_message').length >= 1 &&
        frames.some((frame) => frame.type === 'heartbeat_ack'),
    );
    expect(first[0]).toMatchObject({ type: 'hello', flowId: id, heartbeatInterval: 30_000 });
    expect(first.find((frame) => frame.type === 'turn_notification')).toMatchObject({
      turn: 1,
      reason: 'your turn: open the discussion',
    });
    const lastSeen = Math.max(
      ...first.filter((frame) => frame.eventId !== undefined).map((frame) => frame.eventId as number),
    );
    const rest = await read({ 'last-event-id': String(lastSeen) }, (frames) =>
      frames.some((frame) => frame.type === 'flow_completed'),
    );
    const ids = [...first, ...rest]
      .filter((frame) => frame.eventId !== undefined)
      .map((frame) => frame.eventId as number);
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, index) => index + 1));
    expect(
      rest
        .filter((frame) => frame.type === 'new_message')
        .every((frame) => typeof frame.message.agentName === 'string' && typeof frame.message.content === 'string'),
    ).toBe(true);
    const status = await new Promise<number>((resolve) =>
      new WebSocket(`${hub!.url.replace('http', 'ws')}/elsewhere`).once('unexpected-response', (_request, response) =>
        resolve(response.statusCode ?? 0),
      ),
    );
    expect(status).toBe(404);
  });
});
