// Internal: WebSocket upgrades on the node:http server. A listener that serves an upgrade marks its request; one
// that nobody marked (a path no face serves, or the faces turned off) is refused with a 404, not left hanging.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

const taken = new WeakSet<IncomingMessage>();

/** Says that this upgrade request is served (call it synchronously in the `upgrade` listener). */
export function takeUpgrade(request: IncomingMessage): void {
  taken.add(request);
}

const NOT_FOUND = '{"status":"failure","error":"Not found"}';

/** The last `upgrade` listener: refuses what no listener before it took. */
export function refuseUntakenUpgrade(request: IncomingMessage, socket: Duplex): void {
  if (taken.has(request)) return;
  socket.on('error', () => socket.destroy());
  socket.end(`HTTP/1.1 404 Not Found\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(NOT_FOUND)}\r\nConnection: close\r\n\r\n${NOT_FOUND}`, () => socket.destroy());
}
