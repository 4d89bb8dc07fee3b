// A room live over WebSocket, in ARP's frame shapes: `hello` (with the heartbeat interval) first, then
// `turn_notification`, `new_message`, `flow_completed`, and `heartbeat`/`heartbeat_ack` both ways. Each room frame
// carries its `eventId`; a client reconnects with `Last-Event-ID` (header) or `?lastEventId=` and misses nothing.
// The socket itself is the edge's: its guard, caps (a room is a resource) and per-message rate limit.
import type { SocketSession } from '../../edge/response.js';
import { arpFrame } from './records.js';
import type { Rooms } from './rooms.js';

/** Bytes a socket watcher may leave unsent before it is dropped (it reconnects from its last event id). */
const MAX_BUFFERED_BYTES = 1024 * 1024;

export { arpFrame };

/** Serves one accepted room socket: its events after `last`, heartbeats, and answers to the client's heartbeats. */
export function serveRoomSocket(
  session: SocketSession,
  rooms: Rooms,
  roomId: string,
  last: number,
  heartbeatMs: number,
): void {
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
