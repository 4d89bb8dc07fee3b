// Internal: how every Redis connection of the framework is opened, watched and checked, so that Redis being down
// is an answer (503 Store unavailable), never a hang, a crash or a flood of stack traces.
import { AgoraError, isAgoraError } from './errors.js';
import { Cluster, Redis, setDurability, type RedisClient, type RedisOptions } from './_redis.js';
import { parseRedisTarget, type RedisTarget } from './_redis-target.js';

/** How long one Redis command may take before it fails (and the request answers 503). */
export const REDIS_COMMAND_TIMEOUT_MS = 2000;

/** How long starting an agent waits for Redis before giving up. */
export const REDIS_STARTUP_TIMEOUT_MS = 8000;

/** Where connection trouble is reported (one line when it goes, one when it comes back). */
export type RedisLog = { warn(message: string): void; info(message: string): void };

/**
 * The options every connection uses. Commands fail rather than wait: `commandTimeout` bounds every command (also
 * one queued while disconnected: the queue used to hold requests for the whole outage), `maxRetriesPerRequest: 1`
 * keeps a command from being replayed across reconnections, and {@link storeCall} refuses at once while a
 * connection is known to be down. The offline queue stays on: with auto-pipelining, `enableOfflineQueue: false`
 * makes ioredis reject a pipeline nobody listens to, which ends the process (tried). Reconnection goes on in the
 * background, so the agent recovers by itself.
 */
export const REDIS_OPTIONS: RedisOptions = {
  enableAutoPipelining: true,
  commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
  maxRetriesPerRequest: 1,
  connectTimeout: 5000,
  retryStrategy: (times) => Math.min(100 * times, 2000),
};

/** What a cluster or a Sentinel connection is called in messages (its seed nodes, its master's name). */
const LABELS = new WeakMap<RedisClient, string>();

/** `host:port` of a connection, for messages (never the password). */
export function redisAddress(redis: RedisClient): string {
  const label = LABELS.get(redis);
  if (label !== undefined || redis instanceof Cluster) return label ?? 'Redis Cluster';
  const { host, port, path } = redis.options;
  return path ? String(path) : `${host ?? '127.0.0.1'}:${port ?? 6379}`;
}

/** Connections whose errors are listened to, and those known to be down (lost after being ready, not back yet). */
const WATCHED = new WeakSet<RedisClient>();
const DOWN = new WeakSet<RedisClient>();

/**
 * Listens to a connection's errors, so ioredis never prints "Unhandled error event" stacks: one warning when the
 * connection is lost, one line when it is back.
 */
export function watchRedis(redis: RedisClient, log: RedisLog | undefined): void {
  if (WATCHED.has(redis)) return;
  WATCHED.add(redis);
  let down = false;
  // Until the first ready, a failure is the starting caller's to report (redisReady names the address once).
  let started = redis.status === 'ready';
  // A cluster reports a lost node (its failover under way) and stays ready: only the node's commands fail, within
  // their timeout, while the other masters keep answering. It is down only when it closes.
  const cluster = redis instanceof Cluster;
  if (cluster)
    redis.on('nodeError', (error: Error, node: string) => {
      if (started) log?.warn(`Redis Cluster node ${node} unavailable (${error.message}); waiting for its failover`);
    });
  redis.on('error', (error: Error) => {
    if (down || !started) return;
    down = true;
    if (!cluster) DOWN.add(redis);
    log?.warn(
      `Redis at ${redisAddress(redis)} unavailable (${error.message}); retrying, requests that need it answer 503`,
    );
  });
  // A connection closed by the server may raise no error: requests fail fast from the moment it is gone.
  redis.on('close', () => {
    if (started) DOWN.add(redis);
  });
  redis.on('ready', () => {
    started = true;
    DOWN.delete(redis);
    if (!down) return;
    down = false;
    log?.info(`Redis at ${redisAddress(redis)} reconnected`);
  });
}

/**
 * Opens a watched connection with {@link REDIS_OPTIONS} to what a Redis URL names: one server (`redis://`,
 * `rediss://`), a cluster from its seed nodes (`redis-cluster://`), the master a Sentinel group names
 * (`redis-sentinel://`, following a promoted replica), with the durability of the URL's `waitReplicas`.
 */
export function openRedis(url: string | RedisTarget, log?: RedisLog): RedisClient {
  const target = typeof url === 'string' ? parseRedisTarget(url) : url;
  const redis = connect(target);
  setDurability(redis, { replicas: target.waitReplicas, waitMs: target.waitMs });
  watchRedis(redis, log);
  return redis;
}

function connect(target: RedisTarget): RedisClient {
  const { username, password, tls, extra } = target;
  const auth = { ...(username === undefined ? {} : { username }), ...(password === undefined ? {} : { password }) };
  const secure = tls && { tls: tls.ca ? { ca: tls.ca } : {} };
  if (target.kind === 'single') return new Redis(target.url, { ...REDIS_OPTIONS, ...secure });
  const addresses = (target.kind === 'cluster' ? target.nodes : target.sentinels).map(
    ({ host, port }) => `${host}:${port}`,
  );
  if (target.kind === 'sentinel') {
    const redis = new Redis({
      ...extra,
      ...REDIS_OPTIONS,
      ...auth,
      ...secure,
      sentinels: target.sentinels,
      name: target.name,
      db: target.db,
      ...(tls && { enableTLSForSentinelMode: true, sentinelTLS: tls.ca ? { ca: tls.ca } : {} }),
      // A failover is noticed at once (the Sentinels' +switch-master), not at the next failed command.
      failoverDetector: true,
    });
    LABELS.set(redis, `Redis master "${target.name}" (Sentinels ${addresses.join(',')})`);
    return redis;
  }
  const { retryStrategy, enableAutoPipelining, ...node } = REDIS_OPTIONS;
  const cluster = new Cluster(target.nodes, {
    ...extra,
    redisOptions: { ...node, ...auth, ...secure },
    enableAutoPipelining,
    clusterRetryStrategy: retryStrategy ?? undefined,
    // Moved slots and a failover under way are retried a little; the command timeout still bounds every call.
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    slotsRefreshTimeout: REDIS_COMMAND_TIMEOUT_MS,
  });
  LABELS.set(cluster, `Redis Cluster ${addresses.join(',')}`);
  return cluster;
}

/** Resolves once the connection is ready; rejects with STORE_UNAVAILABLE naming the address at its first failure or after `timeoutMs`. */
export function redisReady(redis: RedisClient, timeoutMs = REDIS_STARTUP_TIMEOUT_MS): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = (error?: Error) => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      redis.off('error', onError);
      if (!error) return resolve();
      reject(
        new AgoraError('STORE_UNAVAILABLE', `Redis unreachable at ${redisAddress(redis)}: ${error.message}`, {
          cause: error,
        }),
      );
    };
    const onReady = () => done();
    const onError = (error: Error) => done(error);
    const timer = setTimeout(() => done(new Error(`no answer in ${Math.round(timeoutMs / 1000)} s`)), timeoutMs);
    redis.on('ready', onReady);
    redis.on('error', onError);
  });
}

// Replies meaning "not now" rather than "wrong": Redis loading its AOF after a restart, a busy script, a replica.
const TRANSIENT_REPLY = /^(LOADING|BUSY|MASTERDOWN|TRYAGAIN|READONLY|CLUSTERDOWN|NOREPLICAS)\b/;

/** Whether a Redis error means the store is unavailable (connection, timeout, transient reply). */
export function isUnavailable(error: unknown): boolean {
  if (isAgoraError(error) || !(error instanceof Error)) return false;
  if (error.name === 'ReplyError') return TRANSIENT_REPLY.test(error.message);
  return true;
}

/**
 * Runs one Redis call, turning unavailability into STORE_UNAVAILABLE (other errors pass unchanged); while the
 * connection is known to be down, refuses at once rather than waiting for the command timeout. The call fails
 * within the command timeout from now even when ioredis holds it back: with auto-pipelining, commands issued while
 * an earlier pipeline is stalled wait for that one's timeout before their own starts (a stalled Redis answered a
 * burst of new conversations in twice the timeout).
 */
export async function storeCall<T>(
  redis: RedisClient,
  call: () => Promise<T>,
  timeoutMs = REDIS_COMMAND_TIMEOUT_MS,
): Promise<T> {
  if (DOWN.has(redis)) throw new AgoraError('STORE_UNAVAILABLE');
  let timer: NodeJS.Timeout | undefined;
  try {
    const pending = call();
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        // The command itself still settles later (ioredis's own timeout): nobody waits for it any more.
        pending.catch(() => undefined);
        reject(new Error('Command timed out'));
      }, timeoutMs);
    });
    return await Promise.race([pending, deadline]);
  } catch (error) {
    if (isUnavailable(error)) throw new AgoraError('STORE_UNAVAILABLE', undefined, { cause: error });
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
