// Room watchers over SSE at scale: capped per client (1,100 from one client do not exhaust the hub, and another
// room still runs), and a watcher of a long history gets all of it, then what comes live (the replay waits for the
// reader instead of tripping the slow-reader drop).
import { get, type IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RoomRecord } from '../../../src/hub/rooms/records.js';
import { startHub, type RunningHub } from '../../../src/hub/server.js';
import { silentLogger } from '../../../src/log.js';
import { readSse } from '../../helpers/sse.js';
import { startParticipants, startSilentParticipant } from './_agents.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function hub(): Promise<RunningHub> {
  const running = await startHub({ port: 0, tickMs: 0, allowPrivateAgents: true, logger: silentLogger });
  cleanups.push(() => running.close());
  return running;
}

/** A room held open: its participants take their turn and never answer. */
async function openRoom(running: RunningHub): Promise<RoomRecord> {
  const [first, second] = [await startSilentParticipant(), await startSilentParticipant()];
  cleanups.push(first.close, second.close);
  return running.rooms!.create({
    topic: 'held open',
    participants: [first.url, second.url],
    pattern: 'round-robin',
    maxTurns: 12,
    turnTimeoutMs: 120_000,
  });
}

/** Opens a watcher on its own connection; resolves with its response once the status line is in. */
function watcher(url: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const request = get(url, { agent: false }, (response) => {
      response.resume();
      resolve(response);
    });
    request.on('error', reject);
  });
}

describe('room watchers over SSE', () => {
  it('caps 1,100 watchers of one room from one client, and a new room still runs', async () => {
    const running = await hub();
    const room = await openRoom(running);
    const responses = await Promise.all(
      Array.from({ length: 1100 }, () => watcher(`${running.url}/rooms/${room.id}/events`)),
    );
    cleanups.push(async () => responses.forEach((response) => response.destroy()));
    const statuses = responses.map((response) => response.statusCode);
    const open = statuses.filter((status) => status === 200).length;
    expect(open).toBe(64);
    expect(statuses.filter((status) => status === 503)).toHaveLength(1100 - 64);
    expect(responses.find((response) => response.statusCode === 503)!.headers['retry-after']).toBe('5');

    const participants = await startParticipants(['plain', 'plain']);
    cleanups.push(participants.close);
    const created = await fetch(`${running.url}/rooms`, {
      method: 'POST',
      body: JSON.stringify({
        topic: 'still runs',
        participants: participants.agents.map((agent) => agent.url),
        maxTurns: 4,
      }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as RoomRecord;
    await vi.waitFor(
      async () =>
        expect(((await (await fetch(`${running.url}/rooms/${id}`)).json()) as RoomRecord).state).toBe('completed'),
      { timeout: 20_000, interval: 100 },
    );

    // Watchers that leave give their places back.
    for (const response of responses) response.destroy();
    await vi.waitFor(
      async () => expect((await watcher(`${running.url}/rooms/${room.id}/events`)).statusCode).toBe(200),
      { timeout: 5000, interval: 50 },
    );
  }, 60_000);

  it('gives a new watcher of a room with 2 MB of history all of it, then the next live message', async () => {
    const running = await hub();
    const room = await openRoom(running);
    const text = 'x'.repeat(8000);
    for (let index = 0; index < 260; index++) await running.rooms!.say(room.id, `${index} ${text}`);
    const history = (await running.rooms!.store.events(room.id, 0)).reduce(
      (sum, event) => sum + JSON.stringify(event.data).length,
      0,
    );
    expect(history).toBeGreaterThan(2_000_000);

    const response = await fetch(`${running.url}/rooms/${room.id}/events`);
    expect(response.status).toBe(200);
    let said = 0;
    for await (const event of readSse(response)) {
      if (event.event !== 'new_message') continue;
      const data = (JSON.parse(event.data) as { message: { kind: string; content: string } }).message;
      if (data.kind !== 'person') continue;
      said += 1;
      // The whole history is in: now something live.
      if (said === 260)
        await fetch(`${running.url}/rooms/${room.id}/messages`, {
          method: 'POST',
          body: JSON.stringify({ text: 'live now', from: 'ana' }),
        });
      if (data.content === 'live now') break;
    }
    expect(said).toBe(261);
  }, 60_000);
});
