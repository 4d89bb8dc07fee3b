// A hub served: its API, its rooms and whatever else it is given (the dashboard) composed as mounts behind the
// edge's one guard, on the edge's node server.
import type { BearerVerifier } from '../edge/oauth.js';
import { compose, type Edge, type EdgeOptions, type Mount } from '../edge/mount.js';
import { listen, type ListenOptions } from '../edge/node.js';
import type { RateLimitOptions } from '../edge/guard.js';
import type { Server } from 'node:http';
import { consoleLogger, type Logger } from '../log.js';
import { hubMount } from './http.js';
import { HUB_DEFAULTS } from './defaults.js';
import { Hub, type HubOptions } from './hub.js';
import { roomsMount, type RoomsMountOptions } from './rooms/http.js';
import { roomsForHub } from './rooms/hub-rooms.js';
import { usageMount } from './usage.js';
import type { Rooms, RoomsOptions } from './rooms/rooms.js';

/** Options of {@link startHub}: the hub's, its guard's, and where to listen. */
export type StartHubOptions = HubOptions & {
  /** Port (0 picks a free one); this and the others left out take their value in {@link HUB_DEFAULTS}. */
  port?: number;
  /** Interface. */
  host?: string;
  /** Bearer tokens; when non-empty, writes, `/runs`, `/metrics`, every room route and the dashboard's data need one. */
  tokens?: string[];
  /** An OAuth authorization server's access tokens, beside `tokens` (an `OAuthResource`); writes need `admin`. */
  oauth?: BearerVerifier;
  /**
   * At most `max` requests per client per `windowMs` (HTTP on every mount, room socket upgrades and messages); more →
   * 429.
   */
  rateLimit?: RateLimitOptions;
  /** Largest request body, in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  /** Origins allowed to make state-changing requests from a browser (`--cors-origin`); others' are refused (403). */
  corsOrigins?: string[];
  /** Host names answered beside loopback names and IPs (`--allowed-host`); without a token, others get 421. */
  allowedHosts?: string[];
  /** How often background work runs: agent checks and peer syncs (0: never, call `hub.tick()`). */
  tickMs?: number;
  /**
   * Mounts served beside the hub's API, made once the hub exists: the dashboard (`createHubDashboard`), as `agora hub`
   * does.
   */
  mounts?: (hub: Hub, rooms: Rooms | undefined) => Mount[];
  /** Rooms on `/rooms` (default on, in this process's memory), with their watcher caps; `false` serves none. */
  rooms?: false | (Omit<RoomsOptions, 'resolve'> & RoomsMountOptions);
  /** The node server's bounds (timeouts, socket caps, slow readers). */
  server?: Omit<ListenOptions, 'port' | 'host' | 'logger'>;
  logger?: Logger;
};

/** A running hub: its core, its rooms, its edge, its address, and a graceful close. */
export type RunningHub = {
  hub: Hub;
  rooms: Rooms | undefined;
  edge: Edge;
  server: Server;
  url: string;
  port: number;
  close(): Promise<void>;
};

/** Whether a listening host is reachable from this machine only. */
function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host);
}

/** The guard's settings of a hub's options. */
function edgeOptions(options: StartHubOptions, logger: Logger): EdgeOptions {
  const { tokens, rateLimit, maxBodyBytes, corsOrigins, allowedHosts, oauth } = options;
  return { logger, tokens, rateLimit, maxBodyBytes, corsOrigins, allowedHosts, ...(oauth ? { oauth } : {}) };
}

/**
 * Starts a hub on node:http, with its background checks: [hub API, rooms, the given mounts] behind one guard.
 * @example
 * const { url, close } = await startHub({
 *   port: 0,
 *   allowPrivateAgents: true,
 *   mounts: (hub, rooms) => [createHubDashboard(hub)],
 * });
 */
export async function startHub(options: StartHubOptions = {}): Promise<RunningHub> {
  const logger = options.logger ?? consoleLogger('agora-hub');
  const { requestTimeoutMs, headersTimeoutMs } = HUB_DEFAULTS;
  const host = options.host ?? HUB_DEFAULTS.host;
  const tickMs = options.tickMs ?? HUB_DEFAULTS.tickMs;
  const hub = new Hub(options);
  const rooms = options.rooms === false ? undefined : await roomsForHub(hub, { ...options.rooms, logger });
  const mounts: Mount[] = [
    hubMount(hub),
    usageMount(hub.usage),
    ...(rooms ? [roomsMount(rooms, options.rooms || {})] : []),
    ...(options.mounts?.(hub, rooms) ?? []),
  ];
  const edge = compose(mounts, edgeOptions(options, logger));
  let running;
  try {
    running = await listen(edge, {
      requestTimeoutMs,
      headersTimeoutMs,
      ...options.server,
      port: options.port ?? HUB_DEFAULTS.port,
      host,
      logger,
    });
  } catch (error) {
    await edge.close();
    await rooms?.close();
    await hub.close();
    throw error;
  }
  if (!isLoopbackHost(host) && (options.tokens ?? []).length === 0 && options.oauth === undefined) {
    logger.warn(
      `hub: listening on ${host} without a token: anyone who reaches it may register, publish, save chains, run rooms and sync; set --token (AGORA_TOKEN)`,
    );
  }
  if (tickMs > 0) hub.startBackground(tickMs);
  if ((options.peers ?? []).length > 0) void hub.syncPeers();
  const { server, url, port } = running;
  return {
    hub,
    rooms,
    edge,
    server,
    url,
    port,
    async close() {
      await rooms?.close();
      await running.close();
      await hub.close();
    },
  };
}
