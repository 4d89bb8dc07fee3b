// ROAR over WebSocket (`/roar/ws`, the `ws` package): an auth frame first when tokens are set (browsers cannot
// send headers on an upgrade), then each frame a bare ROAR message answered by `delta` events and a `done`
// event carrying the signed ROAR reply. Frame size, connection count, auth time and heartbeats are bounded.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { Logger } from '../../log.js';
import { guardUpgradeSocket, takeUpgrade } from '../_upgrade.js';
import { cleanPath } from '../_http.js';
import { answerRoarMessage, type RoarFaceDeps } from './face.js';
import { RoarRefusal } from './message.js';

/** Limits of the ROAR WebSocket. */
export type RoarSocketOptions = {
  /** Path prefix the faces are mounted under (default none). */
  prefix?: string;
  /** Largest frame accepted, bytes (default 1 MiB); larger closes the socket with 1009. */
  maxFrameBytes?: number;
  /** Time to send the auth frame when tokens are set, ms (default 5000). */
  authTimeoutMs?: number;
  /** Interval between pings, ms (default 30 000); a socket that missed one pong is dropped. */
  heartbeatMs?: number;
  /** Most open sockets (default 1000); more are refused with 503. */
  maxConnections?: number;
  /** Messages answered at once per socket (default 4); more get an error event. */
  maxInFlight?: number;
};

/** What the socket needs besides the ROAR face: the token check and the base URL for cards. */
export type RoarSocketDeps = RoarFaceDeps & { checkToken(token: string | undefined): boolean; tokensRequired: boolean; baseUrl(request: IncomingMessage): string; logger: Pick<Logger, 'error'> };

const BUSY = '{"error":"too_many_connections","message":"Too many open WebSockets"}';

function send(socket: WebSocket, text: string): void {
  if (socket.readyState === socket.OPEN) socket.send(text);
}

/** Serves `/roar/ws` on a node:http server; returns a function that stops it and closes every socket. */
export function attachRoarWebSocket(server: Server, deps: RoarSocketDeps, options: RoarSocketOptions = {}): () => Promise<void> {
  const path = `${(options.prefix ?? '').replace(/\/+$/, '')}/roar/ws`;
  const maxFrame = options.maxFrameBytes ?? 1024 * 1024;
  const authTimeout = options.authTimeoutMs ?? 5000;
  const maxConnections = options.maxConnections ?? 1000;
  const maxInFlight = options.maxInFlight ?? 4;
  const sockets = new WebSocketServer({ noServer: true, maxPayload: maxFrame });
  const alive = new WeakMap<WebSocket, boolean>();

  const heartbeat = setInterval(() => {
    for (const socket of sockets.clients) {
      if (alive.get(socket) === false) {
        socket.terminate();
        continue;
      }
      alive.set(socket, false);
      socket.ping();
    }
  }, options.heartbeatMs ?? 30_000);
  heartbeat.unref();

  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (cleanPath(request.url ?? '/') !== path) return;
    takeUpgrade(request);
    guardUpgradeSocket(socket);
    if (sockets.clients.size >= maxConnections) {
      socket.end(`HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(BUSY)}\r\nConnection: close\r\n\r\n${BUSY}`);
      return;
    }
    sockets.handleUpgrade(request, socket, head, (client) => sockets.emit('connection', client, request));
  };
  server.on('upgrade', onUpgrade);

  sockets.on('connection', (socket: WebSocket, request: IncomingMessage) => {
    alive.set(socket, true);
    socket.on('pong', () => alive.set(socket, true));
    socket.on('error', () => socket.terminate());
    let authenticated = !deps.tokensRequired;
    let inFlight = 0;
    const timer = authenticated ? undefined : setTimeout(() => socket.close(1008, 'authentication timeout'), authTimeout);
    timer?.unref();
    socket.on('close', () => clearTimeout(timer));
    const baseUrl = deps.baseUrl(request);

    socket.on('message', (data: RawData, isBinary: boolean) => {
      const text = isBinary ? '' : Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(data as Buffer[]).toString('utf8');
      if (!authenticated) {
        let frame: unknown;
        try {
          frame = JSON.parse(text);
        } catch {
          frame = undefined;
        }
        const token = (frame as { type?: unknown; token?: unknown } | undefined)?.type === 'auth' ? (frame as { token?: unknown }).token : undefined;
        if (typeof token === 'string' && deps.checkToken(token)) {
          authenticated = true;
          clearTimeout(timer);
          send(socket, '{"type":"auth_ok"}');
        } else {
          send(socket, JSON.stringify({ type: 'error', message: 'Unauthorized: send {"type":"auth","token":…} first' }));
          socket.close(1008, 'unauthorized');
        }
        return;
      }
      if (inFlight >= maxInFlight) {
        send(socket, JSON.stringify({ type: 'error', message: `At most ${maxInFlight} messages at once on one socket` }));
        return;
      }
      inFlight += 1;
      answerRoarMessage(deps, text, () => baseUrl, undefined, (delta) => send(socket, JSON.stringify({ type: 'delta', delta })))
        .then(
          (outcome) => send(socket, `{"type":"done","status":${outcome.status},"message":${outcome.text}}`),
          (error: unknown) => {
            if (error instanceof RoarRefusal) send(socket, JSON.stringify({ type: 'error', error: error.code, message: error.message }));
            else {
              deps.logger.error(`ROAR WebSocket: ${error instanceof Error ? error.message : String(error)}`);
              send(socket, JSON.stringify({ type: 'error', error: 'internal_error', message: 'Internal error' }));
            }
          },
        )
        .finally(() => (inFlight -= 1));
    });
  });

  return () =>
    new Promise<void>((resolve) => {
      clearInterval(heartbeat);
      server.off('upgrade', onUpgrade);
      for (const socket of sockets.clients) socket.terminate();
      sockets.close(() => resolve());
    });
}
