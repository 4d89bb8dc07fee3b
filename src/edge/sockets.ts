// The one WebSocket upgrade router: every upgrade of every mount passes the edge's guard (rate limit, cross-site
// rule, token) and its caps (in total, per client, per resource), and every message on an open socket counts
// against the rate limit. A refused or unknown upgrade gets an HTTP answer, never a hanging socket.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { refuseDeepNesting } from '../schemas.js';
import { clientKey } from './guard.js';
import type { Edge, MountedRequest } from './mount.js';
import type { EdgeRequest } from './request.js';
import type { EdgeResponse } from './response.js';

/** Caps on open WebSockets; more are refused with 503. */
export type SocketLimits = {
  /** Open sockets in all (default 1024). */
  maxSockets?: number;
  /** Open sockets per client address or IPv6 /64 (default 64). */
  maxSocketsPerClient?: number;
  /** Open sockets per resource, such as one room (default 256). */
  maxSocketsPerResource?: number;
  /** Largest message a client may send, in bytes (default 1 MiB). */
  maxMessageBytes?: number;
};

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/**
 * Gives an upgrade's socket an `error` listener, first thing in an `upgrade` listener: node:http takes its own off
 * before it emits `upgrade`, and an error on a socket without one (a client resetting the connection while it is
 * answered) ends the process.
 */
export function guardUpgradeSocket(socket: Duplex): void {
  if (socket.listenerCount('error') === 0) socket.on('error', () => socket.destroy());
}

/** Answers an upgrade with a plain HTTP response and closes the socket. */
export function refuseUpgrade(socket: Duplex, response: EdgeResponse): void {
  const body = typeof response.body === 'string' ? response.body : response.body.toString('utf8');
  const headers = Object.entries({
    ...response.headers,
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
  })
    .filter(([name]) => /^[a-z0-9-]+$/.test(name))
    .map(([name, value]) => `${name}: ${String(value).replace(/[\r\n]/g, '')}\r\n`)
    .join('');
  if (!socket.writable) return void socket.destroy();
  socket.end(`HTTP/1.1 ${response.status} ${REASONS[response.status] ?? 'Error'}\r\n${headers}\r\n${body}`, () =>
    socket.destroy(),
  );
}

function asBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
}

/** Routes the upgrades of a node server through an edge; `close` ends every open socket. */
export class SocketRouter {
  readonly #server: WebSocketServer;
  readonly #perClient = new Map<string, number>();
  readonly #perResource = new Map<string, number>();
  readonly #maxSockets: number;
  readonly #maxPerClient: number;
  readonly #maxPerResource: number;

  constructor(
    private readonly edge: Edge,
    limits: SocketLimits = {},
  ) {
    this.#server = new WebSocketServer({ noServer: true, maxPayload: limits.maxMessageBytes ?? 1024 * 1024 });
    this.#maxSockets = limits.maxSockets ?? 1024;
    this.#maxPerClient = limits.maxSocketsPerClient ?? 64;
    this.#maxPerResource = limits.maxSocketsPerResource ?? 256;
  }

  /** How many sockets are open. */
  get size(): number {
    return this.#server.clients.size;
  }

  /** The server's `upgrade` listener. */
  readonly upgrade = (incoming: IncomingMessage, socket: Duplex, head: Buffer): void => {
    guardUpgradeSocket(socket);
    const request: MountedRequest = {
      method: incoming.method ?? 'GET',
      path: incoming.url ?? '/',
      headers: incoming.headers,
      body: undefined,
      remoteAddress: incoming.socket.remoteAddress,
    };
    this.edge.upgrade(request).then(
      (response) => this.#accept(incoming, socket, head, request, response),
      (error: unknown) => refuseUpgrade(socket, this.edge.failure(request, error)),
    );
  };

  #accept(
    incoming: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    request: MountedRequest,
    response: EdgeResponse,
  ): void {
    const accept = response.upgrade;
    if (accept === undefined) return refuseUpgrade(socket, response);
    const client = clientKey(request.remoteAddress);
    const resource = accept.resource;
    const busy =
      this.size >= this.#maxSockets ||
      (this.#perClient.get(client) ?? 0) >= this.#maxPerClient ||
      (resource !== undefined && (this.#perResource.get(resource) ?? 0) >= this.#maxPerResource);
    if (busy) {
      const refusal = (request.mount ?? this.edge.mounts[0])?.failure(503, 'Too many open sockets') ?? response;
      refusal.headers['retry-after'] = '5';
      return refuseUpgrade(socket, refusal);
    }
    if (socket.destroyed) return;
    this.#server.handleUpgrade(incoming, socket, head, (opened) => {
      count(this.#perClient, client, 1);
      if (resource !== undefined) count(this.#perResource, resource, 1);
      opened.on('error', () => opened.terminate());
      opened.once('close', () => {
        count(this.#perClient, client, -1);
        if (resource !== undefined) count(this.#perResource, resource, -1);
      });
      accept.accept({
        client: opened,
        request,
        onMessage: (listener) => this.#listen(opened, request, listener),
        acceptsToken: this.#acceptsToken,
      });
    });
  }

  // Every message counts against the rate limit, in order, and is a body like any other: nested past the cap (as
  // `POST /` refuses), it never reaches the mount. A refused one is answered in the mount's shape, or the socket is
  // closed (1008, policy violation).
  #listen(
    client: WebSocket,
    request: EdgeRequest & MountedRequest,
    listener: (data: Buffer, isBinary: boolean) => void,
  ): void {
    let queue: Promise<void> = Promise.resolve();
    const refuse = (status: number, message: string) => {
      const frame = request.mount?.socketFailure?.(status, message);
      if (frame !== undefined) client.send(frame);
      else client.close(1008, message.slice(0, 120));
    };
    client.on('message', (data, isBinary) => {
      queue = queue
        .then(() => this.edge.hit(request.remoteAddress, request.principal))
        .then((retryAfter) => {
          if (client.readyState !== client.OPEN) return;
          if (retryAfter > 0) return refuse(429, 'Too many requests');
          const message = asBuffer(data);
          if (!isBinary) {
            try {
              refuseDeepNesting(message, 'Message');
            } catch (error) {
              return refuse(400, (error as Error).message);
            }
          }
          return listener(message, isBinary);
        })
        .catch(() => client.terminate());
    });
  }

  // One token check for every surface: a socket's own auth frame is checked against the edge's tokens too.
  // With OAuth on, a token is needed even without static ones; an access token is checked on the upgrade only.
  readonly #acceptsToken = (token: string | undefined): boolean =>
    (!this.edge.tokens.enabled && this.edge.oauth === undefined) || this.edge.tokens.acceptsToken(token);

  /** Ends every open socket. */
  close(): void {
    for (const client of this.#server.clients) client.terminate();
    this.#server.close();
  }
}

function count(counts: Map<string, number>, key: string, change: number): void {
  const next = (counts.get(key) ?? 0) + change;
  if (next <= 0) counts.delete(key);
  else counts.set(key, next);
}
