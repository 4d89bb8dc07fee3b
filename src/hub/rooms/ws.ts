// A room live over WebSocket, in ARP's frame shapes: `hello` (with the heartbeat interval) first, then
// `turn_notification`, `new_message`, `flow_completed`, and `heartbeat`/`heartbeat_ack` both ways. Each room frame
// carries its `eventId`; a client reconnects with `Last-Event-ID` (header) or `?lastEventId=` and misses nothing.
// The socket itself is the edge's: its guard, caps (a room is a resource) and per-message rate limit.
import type { SocketSession } from '../../edge/response.js';
import type { RoomEvent } from './records.js';
import type { Rooms } from './rooms.js';

/** Bytes a socket watcher may leave unsent before it is dropped (it reconnects from its last event id). */
const MAX_BUFFERED_BYTES = 1024 * 1024;

/** The ARP frame of a room event. */
export function arpFrame(roomId: string, event: RoomEvent): Record<string, unknown> {
  const { data } = event;
  if (event.type === 'new_message') return { type: 'new_message', flowId: roomId, eventId: event.id, message: { agentName: data.speaker, content: data.text, kind: data.kind, turn: data.turn } };
  if (event.type === 'turn_notification') return { type: 'turn_notification', flowId: roomId, eventId: event.id, agentName: data.speaker, turn: data.turn, reason: data.why };
  if (event.type === 'flow_completed') return { type: 'flow_completed', flowId: roomId, eventId: event.id, reason: data.reason, state: data.state };
  return { type: 'flow_state', flowId: roomId, eventId: event.id, state: data.state };
}

/** Serves one accepted room socket: its events after `last`, heartbeats, and answers to the client's heartbeats. */
export function serveRoomSocket(session: SocketSession, rooms: Rooms, roomId: string, last: number, heartbeatMs: number): void {
  const { client } = session;
  const controller = new AbortController();
  const send = (frame: unknown) => client.readyState === client.OPEN && client.send(JSON.stringify(frame));
  send({ type: 'hello', flowId: roomId, heartbeatInterval: heartbeatMs });
  const beat = setInterval(() => send({ type: 'heartbeat' }), heartbeatMs);
  beat.unref();
  session.onMessage((data) => {
    let frame: { type?: unknown } | undefined;
    try {
      frame = JSON.parse(data.toString('utf8')) as { type?: unknown };
    } catch {
      frame = undefined;
    }
    if (frame?.type === 'heartbeat') send({ type: 'heartbeat_ack' });
  });
  client.once('close', () => {
    clearInterval(beat);
    controller.abort();
  });
  void (async () => {
    for await (const event of rooms.watch(roomId, last, controller.signal)) {
      // A watcher that does not read is dropped; it reconnects from its last event id.
      if (client.bufferedAmount > MAX_BUFFERED_BYTES) return client.terminate();
      send(arpFrame(roomId, event));
    }
    client.close(1000, 'room ended');
  })().catch(() => client.terminate());
}
