import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { describeError } from '../errors.js';
import { guardUpgradeSocket } from '../faces/_upgrade.js';
import { readBody } from '../http/_node-request.js';
import { underPrefix, type ExtraRoutes } from '../http/server.js';
import { consoleLogger } from '../log.js';
import { createHubHandler, type HubHttpOptions } from './handler.js';
import { Hub, type HubOptions } from './hub.js';
import { roomsForHub } from './rooms/mount.js';
import type { Rooms, RoomsOptions } from './rooms/rooms.js';
import { createRoomRoutes } from './rooms/routes.js';
import { attachRoomSockets } from './rooms/ws.js';

/** Options of {@link startHub}: the hub's, its HTTP edge's, and where to listen. */
export type StartHubOptions = HubOptions &
  HubHttpOptions & {
    /** Port (default 4000; 0 picks a free one). */
    port?: number;
    /** Interface (default 127.0.0.1). */
    host?: string;
    /** How often background work runs: agent checks and peer syncs (default 5 s; 0: never, call `hub.tick()`). */
    tickMs?: number;
    /** Routes served beside the hub's API, made once the hub exists: the dashboard (`createHubDashboard`), as `agora hub` does. */
    routes?: (hub: Hub, rooms: Rooms | undefined) => ExtraRoutes;
    /** Rooms on `/rooms` (default on, in this process's memory); `false` serves none. */
    rooms?: false | Omit<RoomsOptions, 'resolve'>;
  };

/** A running hub: its core, its address, and a graceful close. */
export type RunningHub = { hub: Hub; server: Server; url: string; port: number; rooms: Rooms | undefined; close(): Promise<void> };

/**
 * A node `(request, response)` listener for the hub: what `startHub` serves, and what an Express app mounts
 * (`app.use('/hub', createHubListener(hub))`: Express hands it the path relative to the mount point).
 */
export function createHubListener(
  hub: Hub,
  options: HubHttpOptions = {},
  routes?: ExtraRoutes,
  rooms?: (incoming: IncomingMessage, response: ServerResponse) => Promise<boolean>,
): (incoming: IncomingMessage, response: ServerResponse) => void {
  const handle = createHubHandler(hub, options);
  const logger = options.logger ?? consoleLogger('agora-hub');
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  const failed = (incoming: IncomingMessage, response: ServerResponse) => (error: unknown) => {
    logger.error(`${incoming.method} ${incoming.url}: ${describeError(error)}`);
    if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json; charset=utf-8' }).end('{"status":"failure","error":"Internal error"}');
  };
  const core = (incoming: IncomingMessage, response: ServerResponse): void => {
    handle({
      method: incoming.method ?? 'GET',
      url: incoming.url ?? '/',
      headers: incoming.headers,
      loadBody: () => readBody(incoming, maxBodyBytes),
      ...(incoming.socket.remoteAddress ? { remoteAddress: incoming.socket.remoteAddress } : {}),
    }).then((result) => {
      if (response.headersSent || response.destroyed) return;
      response.writeHead(result.status, result.headers).end(incoming.method === 'HEAD' ? '' : result.body);
    }, failed(incoming, response));
  };
  return (incoming, response) => {
    if (rooms && underPrefix(incoming.url ?? '/', '/rooms')) {
      // A target the rooms do not take after all (`/rooms/%2e%2e` reads as `/`) is the core's to answer.
      rooms(incoming, response).then((taken) => {
        if (!taken) core(incoming, response);
      }, failed(incoming, response));
      return;
    }
    if (routes && underPrefix(incoming.url ?? '/', routes.prefix)) {
      routes.handle(incoming, response, incoming.url ?? '/').catch(failed(incoming, response));
      return;
    }
    core(incoming, response);
  };
}

/**
 * Starts a hub on node:http, with its background checks.
 * @example const { url, close } = await startHub({ port: 0, allowPrivateAgents: true });
 */
export async function startHub(options: StartHubOptions = {}): Promise<RunningHub> {
  const hub = new Hub(options);
  const rooms = options.rooms === false ? undefined : await roomsForHub(hub, { ...options.rooms, ...(options.logger ? { logger: options.logger } : {}) });
  const routes = options.routes?.(hub, rooms);
  const roomRoutes = rooms ? createRoomRoutes(rooms, { ...(options.tokens ? { tokens: options.tokens } : {}) }) : undefined;
  const server = createServer({ requestTimeout: 30_000, headersTimeout: 10_000 }, createHubListener(hub, options, routes, roomRoutes));
  // Rooms over WebSocket (ARP's frames); any other upgrade is refused rather than left hanging.
  const stopSockets = rooms ? attachRoomSockets(server, rooms, { ...(options.tokens ? { tokens: options.tokens } : {}) }) : undefined;
  if (!rooms) {
    server.on('upgrade', (_request, socket: Duplex) => {
      guardUpgradeSocket(socket);
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n', () => socket.destroy());
    });
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 4000, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const logger = options.logger ?? consoleLogger('agora-hub');
  server.on('error', (error) => logger.error(`hub HTTP server: ${describeError(error)}`));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : (options.port ?? 4000);
  const host = options.host === undefined || options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  if ((options.tickMs ?? 5000) > 0) hub.startBackground(options.tickMs ?? 5000);
  if ((options.peers ?? []).length > 0) void hub.syncPeers();
  return {
    hub,
    server,
    url,
    port,
    rooms,
    async close() {
      routes?.close?.();
      stopSockets?.();
      await rooms?.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await hub.close();
    },
  };
}
