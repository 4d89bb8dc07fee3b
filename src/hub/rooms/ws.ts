// A room live over WebSocket, in ARP's frame shapes: `hello` (with the heartbeat interval) first, then
// `turn_notification`, `new_message`, `flow_completed`, and `heartbeat`/`heartbeat_ack` both ways. Each room frame
// carries its `eventId`; a client reconnects with `Last-Event-ID` (header) or `?lastEventId=` and misses nothing.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { TokenCheck } from '../../http/_limits.js';
import { guardUpgradeSocket } from '../../faces/_upgrade.js';
import { requestTarget } from '../../http/_node-request.js';
import type { RoomEvent } from './records.js';
import type { Rooms } from './rooms.js';

/** Options of {@link attachRoomSockets}. */
export type RoomSocketOptions = { tokens?: string[]; heartbeatMs?: number; maxSockets?: number };

const PATH = /^\/rooms\/([A-Za-z0-9_-]{1,64})\/ws$/;

/** The ARP frame of a room event. */
export function arpFrame(roomId: string, event: RoomEvent): Record<string, unknown> {
  const { data } = event;
  if (event.type === 'new_message') return { type: 'new_message', flowId: roomId, eventId: event.id, message: { agentName: data.speaker, content: data.text, kind: data.kind, turn: data.turn } };
  if (event.type === 'turn_notification') return { type: 'turn_notification', flowId: roomId, eventId: event.id, agentName: data.speaker, turn: data.turn, reason: data.why };
  if (event.type === 'flow_completed') return { type: 'flow_completed', flowId: roomId, eventId: event.id, reason: data.reason, state: data.state };
  return { type: 'flow_state', flowId: roomId, eventId: event.id, state: data.state };
}

/** Serves `/rooms/:id/ws` on a node:http server; returns its stopper. */
export function attachRoomSockets(server: Server, rooms: Rooms, options: RoomSocketOptions = {}): () => void {
  const sockets = new WebSocketServer({ noServer: true, maxPayload: 4096 });
  const tokens = new TokenCheck(options.tokens ?? []);
  const heartbeatMs = options.heartbeatMs ?? 30_000;
  const refuse = (socket: Duplex, status: string) => socket.end(`HTTP/1.1 ${status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`, () => socket.destroy());

  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    guardUpgradeSocket(socket);
    // Thrown here, an error would end the process (an 'upgrade' listener runs outside any promise).
    const url = requestTarget(request.url);
    const match = url && PATH.exec(url.pathname);
    if (!url || !match) return refuse(socket, '404 Not Found');
    const auth = request.headers.authorization;
    if (tokens.enabled && !tokens.accepts(auth)) return refuse(socket, '401 Unauthorized');
    if (sockets.clients.size >= (options.maxSockets ?? 256)) return refuse(socket, '503 Service Unavailable');
    const header = request.headers['last-event-id'] ?? url.searchParams.get('lastEventId') ?? '0';
    const last = /^\d{1,15}$/.test(String(header)) ? Number(header) : undefined;
    if (last === undefined) return refuse(socket, '400 Bad Request');
    const roomId = match[1]!;
    rooms.get(roomId).then(
      (room) => {
        if (!room) return refuse(socket, '404 Not Found');
        sockets.handleUpgrade(request, socket, head, (client) => serve(client, roomId, last));
      },
      // The store unreachable (Redis down): refused, never a rejection nobody handles (that ends the process).
      () => refuse(socket, '503 Service Unavailable'),
    );
  };

  function serve(client: WebSocket, roomId: string, last: number): void {
    const controller = new AbortController();
    const send = (frame: unknown) => client.readyState === client.OPEN && client.send(JSON.stringify(frame));
    send({ type: 'hello', flowId: roomId, heartbeatInterval: heartbeatMs });
    const beat = setInterval(() => send({ type: 'heartbeat' }), heartbeatMs);
    beat.unref();
    client.on('message', (data) => {
      let frame: { type?: unknown } | undefined;
      try {
        frame = JSON.parse(String(data)) as { type?: unknown };
      } catch {
        frame = undefined;
      }
      if (frame?.type === 'heartbeat') send({ type: 'heartbeat_ack' });
    });
    client.on('error', () => client.terminate());
    client.once('close', () => {
      clearInterval(beat);
      controller.abort();
    });
    void (async () => {
      for await (const event of rooms.watch(roomId, last, controller.signal)) {
        // A watcher that does not read is dropped; it reconnects from its last event id.
        if (client.bufferedAmount > 1024 * 1024) return client.terminate();
        send(arpFrame(roomId, event));
      }
      client.close(1000, 'room ended');
    })().catch(() => client.terminate());
  }

  server.on('upgrade', onUpgrade);
  return () => {
    server.off('upgrade', onUpgrade);
    for (const client of sockets.clients) client.terminate();
    sockets.close();
  };
}
