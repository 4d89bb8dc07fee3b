import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ROOM_DOCUMENT } from '../../../src/hub/rooms/document.js';
import { roomEventOfFrame, type RoomEvent } from '../../../src/hub/rooms/records.js';
import { silentLogger } from '../../../src/log.js';
import { Receiver } from '../../../src/receiver.js';
import { makeAgentFolder } from '../../helpers/agent-folder.js';
import { readSse } from '../../helpers/sse.js';
import { serveReceiver } from '../_agents.js';

/** A participant served on loopback. */
export type TestAgent = { url: string; close(): Promise<void> };

/** How a test participant answers its turns. */
export type Mode = 'plain' | 'lead' | 'mention' | 'slow' | 'steady' | 'done';

// One routine per mode, answering the room document: the hub's queries reach it with no LLM call.
function routine(mode: Mode): string {
  return `export default async function turn(body) {
  const heard = body.transcript.filter((entry) => entry.kind === 'person').map((entry) => entry.text);
  const others = body.participants.filter((name) => name !== body.you);
  const said = body.you + ' at turn ' + body.turn + (heard.length ? ' (heard: ' + heard.join(' | ') + ')' : '');
  const mode = ${JSON.stringify(mode)};
  if (mode === 'slow') await new Promise((resolve) => setTimeout(resolve, 1500));
  if (mode === 'steady') await new Promise((resolve) => setTimeout(resolve, 150));
  if (mode === 'done') return { message: said, done: true };
  if (mode === 'lead') {
    if (body.why.startsWith('synthesis')) return { message: 'SYNTHESIS of ' + body.transcript.filter((entry) => entry.kind === 'agent').length + ' messages' };
    return { message: said + ' and gives the floor', next: '@' + others[others.length - 1] };
  }
  if (mode === 'mention') return JSON.stringify({ message: said + ' asks @' + others[others.length - 1] });
  return { message: said };
}
`;
}

/** Starts Agora agents (routines on the room document), one per mode. */
export async function startParticipants(modes: Mode[]): Promise<{ agents: TestAgent[]; close(): Promise<void> }> {
  const agents: TestAgent[] = [];
  const folders: { cleanup(): Promise<void> }[] = [];
  for (const mode of modes) {
    const folder = await makeAgentFolder({ 'protocols/room.md': ROOM_DOCUMENT, 'routines/room.ts': routine(mode) });
    folders.push(folder);
    const receiver = await Receiver.start({ dir: folder.dir, llm: null, watch: false, logger: silentLogger });
    const server = await serveReceiver(receiver);
    agents.push({
      url: server.url,
      async close() {
        await server.close();
        await receiver.close();
      },
    });
  }
  return {
    agents,
    async close() {
      for (const agent of agents) await agent.close();
      for (const folder of folders) await folder.cleanup();
    },
  };
}

/** Reads a room's SSE events (from `lastEventId`) until `stop` holds or the stream ends. */
export async function readRoomEvents(
  base: string,
  id: string,
  options: { lastEventId?: number; token?: string; stop?: (events: RoomEvent[]) => boolean } = {},
): Promise<RoomEvent[]> {
  const headers = {
    ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
    ...(options.lastEventId ? { 'last-event-id': String(options.lastEventId) } : {}),
  };
  const events: RoomEvent[] = [];
  for await (const event of readSse(await fetch(`${base}/rooms/${id}/events`, { headers }))) {
    if (event.id === undefined) continue;
    // The hub sends ARP's frames: read back as the room's events.
    const room = roomEventOfFrame(JSON.parse(event.data) as Record<string, unknown>);
    if (room === undefined) throw new Error(`Not an ARP frame of a room event: ${event.data}`);
    events.push(room);
    if (options.stop?.(events)) break;
  }
  return events;
}

/** A participant that takes every query and never answers: its room's turn stays under way, the room stays open. */
export async function startSilentParticipant(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(() => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
