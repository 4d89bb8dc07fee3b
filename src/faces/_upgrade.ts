// Internal: WebSocket upgrades on the node:http server, beside the faces that take them (the server imports the
// faces, never the reverse; the hub's sockets use them too). A listener that serves an upgrade marks its request;
// one that nobody marked (a path no face serves, or the faces turned off) is refused with a 404, not left hanging.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

const taken = new WeakSet<IncomingMessage>();

/**
 * Gives an upgrade's socket an `error` listener, first thing in an `upgrade` listener: node:http takes its own off
 * before it emits `upgrade`, and an error on a socket without one (a client resetting the connection while it is
 * answered) ends the process.
 */
export function guardUpgradeSocket(socket: Duplex): void {
  if (socket.listenerCount('error') === 0) socket.on('error', () => socket.destroy());
}

/** Says that this upgrade request is served (call it synchronously in the `upgrade` listener). */
export function takeUpgrade(request: IncomingMessage): void {
  taken.add(request);
}

const NOT_FOUND = '{"status":"failure","error":"Not found"}';

/** The last `upgrade` listener: refuses what no listener before it took. */
export function refuseUntakenUpgrade(request: IncomingMessage, socket: Duplex): void {
  if (taken.has(request)) return;
  guardUpgradeSocket(socket);
  socket.end(`HTTP/1.1 404 Not Found\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(NOT_FOUND)}\r\nConnection: close\r\n\r\n${NOT_FOUND}`, () => socket.destroy());
}
