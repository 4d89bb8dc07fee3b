// The one place a store URL is read and the stores it names are opened, for an agent (conversations and their
// events, memory, ROAR replay, rate limits) and for a hub (directory and catalogue, rooms, rate limits): `memory`
// keeps everything in the process (and the agent's memory in `<dir>/.agora/`), a `redis://` URL shares it between
// processes. The Redis backends load only for a Redis URL.
import { join } from 'node:path';
import type { RedisClient } from '../_redis.js';
import { parseRedisTarget, REDIS_SCHEMES } from '../_redis-target.js';
import type { RedisStoreOptions } from '../conversation/redis.js';
import type { ConversationStore } from '../conversation/store.js';
import { AgoraError } from '../errors.js';
import type { ReplayGuard } from '../bindings/roar/replay.js';
import type { RoomStore } from '../hub/rooms/store.js';
import type { HubStore } from '../hub/store.js';
import type { Logger } from '../log.js';
import { FileMemory, type AgentMemory } from '../memory/file.js';

/** The store options a Redis store URL may carry in its query (an agent's), beside what ioredis understands. */
const STORE_PARAMETERS = ['prefix', 'lockTtlMs', 'lockWaitMs', 'tombstoneMs'] as const;

/** Where state lives, as a store URL names it: in the process, or in Redis with the store's own options. */
export type StoreLocation = { kind: 'memory' } | { kind: 'redis'; url: string; options: RedisStoreOptions };

/** Whether a store URL names a store that several processes share (`--workers` over 1 needs one). */
export function isSharedStore(store: string): boolean {
  return REDIS_SCHEMES.test(store);
}

/**
 * Reads a store URL: `memory`, or a Redis URL (`redis[s]://`, `redis[s]-cluster://host:port,…`,
 * `redis[s]-sentinel://host:port,…/<master>`) whose query may carry the store's options: `prefix` (key prefix), and
 * `lockTtlMs`, `lockWaitMs`, `tombstoneMs` in ms (an agent's); and the connection's: `ca` (a PEM file),
 * `waitReplicas`, `waitMs` (what a turn's write waits for). Other parameters (family…) stay for ioredis.
 * Failures are AgoraError('INVALID_ARGUMENT') starting `store:` (the URL is never echoed: it may hold a password).
 * @example parseStoreUrl('redis-cluster://10.0.0.1:6379,10.0.0.2:6379?prefix=shop:&waitReplicas=1')
 */
export function parseStoreUrl(text: string): StoreLocation {
  if (text === 'memory') return { kind: 'memory' };
  if (!isSharedStore(text))
    throw new AgoraError(
      'INVALID_ARGUMENT',
      `store: must be "memory" or a redis://, redis-cluster:// or redis-sentinel:// URL, got ${JSON.stringify(text)}`,
    );
  const mark = text.indexOf('?');
  const query = new URLSearchParams(mark < 0 ? '' : text.slice(mark + 1));
  const options: RedisStoreOptions = {};
  for (const name of STORE_PARAMETERS) {
    const value = query.get(name);
    if (value === null) continue;
    query.delete(name);
    if (name === 'prefix') {
      if (!value) throw new AgoraError('INVALID_ARGUMENT', 'store: prefix must not be empty');
      // A brace would start a cluster hash tag of its own and split one conversation's keys over slots.
      if (/[{}]/.test(value)) throw new AgoraError('INVALID_ARGUMENT', 'store: prefix must not hold { or }');
      options.prefix = value;
      continue;
    }
    const number = Number(value);
    if (!Number.isSafeInteger(number) || number < 1)
      throw new AgoraError(
        'INVALID_ARGUMENT',
        `store: ${name} must be a positive integer of milliseconds, got ${JSON.stringify(value)}`,
      );
    options[name] = number;
  }
  // A bare `?` left behind would be harmless but untidy.
  const rest = query.toString();
  const url = `${mark < 0 ? text : text.slice(0, mark)}${rest ? `?${rest}` : ''}`;
  // Checked now (hosts, ports, the CA file, the wait bounds), so a bad URL is a usage error before any connection.
  parseRedisTarget(url);
  return { kind: 'redis', url, options };
}

/** The connection every process of an agent or a hub counts rate limits in, with its key prefix (Redis only). */
export type SharedConnection = { redis: RedisClient; prefix: string };

/** What an agent's store needs besides its URL: its folder, a memory of its own, the defaults of a Redis store. */
export type AgentStoreOptions = {
  role: 'agent';
  /** The agent folder: a `memory` store keeps what the agent learns in `<dir>/.agora/`. */
  dir: string;
  /** A memory of the caller's (taken over the store's). */
  memory?: AgentMemory;
  /** Options of a Redis conversation store the URL's query does not set (`tombstoneMs`…). */
  redis?: RedisStoreOptions;
  logger?: Logger;
};

/** An agent's stores: conversations and their events (Redis; else the receiver makes its own), memory, replay. */
export type AgentStores = {
  kind: StoreLocation['kind'];
  conversations?: ConversationStore;
  memory: AgentMemory;
  /** The ROAR replay guard every process shares (Redis only). */
  replay?: ReplayGuard;
  shared?: SharedConnection;
  close(): Promise<void>;
};

/** What a hub's store needs besides its URL. */
export type HubStoreOptions = { role: 'hub'; logger?: Logger };

/** A hub's stores (Redis; else the hub keeps them in memory): its directory and catalogue, its rooms. */
export type HubStores = {
  kind: StoreLocation['kind'];
  /** Closed by the hub that uses it. */
  hub?: HubStore;
  rooms?: RoomStore;
  shared?: SharedConnection;
  close(): Promise<void>;
};

/**
 * Opens the stores a store URL names, for an agent or a hub; an unreachable Redis is one clear failure naming its
 * address (STORE_UNAVAILABLE), not a start that hangs on retries. An agent may also pass a store object of its own.
 * @example const stores = await openStores('redis://127.0.0.1:6379/0', { role: 'hub' });
 */
export function openStores(store: string | ConversationStore, options: AgentStoreOptions): Promise<AgentStores>;
export function openStores(store: string, options: HubStoreOptions): Promise<HubStores>;
export async function openStores(
  store: string | ConversationStore,
  options: AgentStoreOptions | HubStoreOptions,
): Promise<AgentStores | HubStores> {
  const location: StoreLocation = typeof store === 'string' ? parseStoreUrl(store) : { kind: 'memory' };
  if (options.role === 'hub') return location.kind === 'redis' ? openHubRedis(location, options) : memoryStores();
  if (location.kind === 'redis') return openAgentRedis(location, options);
  return {
    ...memoryStores(),
    conversations: typeof store === 'string' ? undefined : store,
    memory: options.memory ?? new FileMemory(join(options.dir, '.agora')),
  };
}

function memoryStores(): { kind: 'memory'; close(): Promise<void> } {
  return { kind: 'memory', close: async () => {} };
}

// Fails (closing the connection) unless Redis answers within the start-up bound.
async function ready(redis: RedisClient, close: () => Promise<void>): Promise<void> {
  const { redisReady } = await import('../_redis-connection.js');
  await redisReady(redis).catch(async (error: unknown) => {
    await close();
    throw error;
  });
}

async function openAgentRedis(
  location: Extract<StoreLocation, { kind: 'redis' }>,
  options: AgentStoreOptions,
): Promise<AgentStores> {
  const [{ connectRedis }, { RedisReplayGuard }] = await Promise.all([
    import('../conversation/redis.js'),
    import('../bindings/roar/replay-redis.js'),
  ]);
  const connection = connectRedis(location.url, { ...options.redis, ...location.options, logger: options.logger });
  await ready(connection.redis, () => connection.close());
  return {
    kind: 'redis',
    conversations: connection.store,
    memory: options.memory ?? connection.memory,
    replay: new RedisReplayGuard(connection.redis),
    shared: { redis: connection.redis, prefix: location.options.prefix ?? options.redis?.prefix ?? 'agora:' },
    close: () => connection.close(),
  };
}

async function openHubRedis(
  location: Extract<StoreLocation, { kind: 'redis' }>,
  { logger }: HubStoreOptions,
): Promise<HubStores> {
  const { prefix, ...agentOnly } = location.options;
  const misplaced = Object.keys(agentOnly)[0];
  if (misplaced !== undefined)
    throw new AgoraError('INVALID_ARGUMENT', `store: ${misplaced} is an option of an agent's store, not a hub's`);
  const [{ openRedis }, { quit }, { RedisHubStore }, { RedisRoomStore }] = await Promise.all([
    import('../_redis-connection.js'),
    import('../_redis.js'),
    import('../hub/redis-store.js'),
    import('../hub/rooms/redis-store.js'),
  ]);
  // One connection for the directory, the catalogue and the rate limits; rooms keep one of their own.
  const redis = openRedis(location.url, logger);
  await ready(redis, () => quit(redis));
  const rooms = new RedisRoomStore({ url: location.url, prefix, logger });
  return {
    kind: 'redis',
    hub: new RedisHubStore(redis, { prefix, logger }),
    rooms,
    shared: { redis, prefix: prefix ?? 'agora-hub:' },
    async close() {
      await rooms.close();
      await quit(redis);
    },
  };
}
