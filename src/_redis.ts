// Internal: what the Redis backends share: the ioredis import, Lua scripts by SHA (durable ones followed by WAIT),
// keys spread over a cluster's slots, polite shutdown.
import { createHash } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { AgoraError } from './errors.js';
import type { JsonValue } from './schemas.js';

export { Cluster, Redis };
export type { ClusterOptions, RedisOptions } from 'ioredis';

/** A connection to one Redis (standalone, or the master a Sentinel names) or to a Redis Cluster. */
export type RedisClient = Redis | Cluster;

/** A Lua script; a `durable` one is a write a turn's answer waits on (see {@link setDurability}). */
export type Script = { source: string; sha: string; durable: boolean };

export function script(source: string, options: { durable?: boolean } = {}): Script {
  return { source, sha: createHash('sha1').update(source).digest('hex'), durable: options.durable ?? false };
}

/** How many replicas must hold a durable write, and how long to wait for them (Redis `WAIT`). */
export type Durability = { replicas: number; waitMs: number };

const DURABILITY = new WeakMap<RedisClient, Durability>();

/** Makes every durable script on this connection wait for `replicas` replicas (0: answered at the master's write). */
export function setDurability(redis: RedisClient, durability: Durability): void {
  if (durability.replicas > 0) DURABILITY.set(redis, durability);
  else DURABILITY.delete(redis);
}

/** The durability a connection's writes wait for (replicas 0: none). */
export function durabilityOf(redis: RedisClient): Durability {
  return DURABILITY.get(redis) ?? { replicas: 0, waitMs: 0 };
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * Runs a Lua script by its SHA, sending the source only when the server does not know it yet. A durable script on a
 * connection with replicas to wait for is followed, in one pipeline to the same node, by `WAIT`: fewer replicas
 * than asked within the bound is STORE_UNAVAILABLE, so nothing is answered that a failover could take back.
 */
export async function runScript(
  redis: RedisClient,
  lua: Script,
  keys: string[],
  args: (string | number)[],
): Promise<unknown> {
  const durability = lua.durable ? DURABILITY.get(redis) : undefined;
  if (durability) return runDurably(redis, lua, keys, args, durability);
  try {
    return await redis.evalsha(lua.sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!isNoScript(error)) throw error;
    return redis.eval(lua.source, keys.length, ...keys, ...args);
  }
}

// WAIT counts the replicas that acknowledged this connection's writes so far: sent in the script's pipeline, it goes
// to the node that ran the script, on the same connection, right after it (a cluster routes the pipeline by its keys).
async function runDurably(
  redis: RedisClient,
  lua: Script,
  keys: string[],
  args: (string | number)[],
  { replicas, waitMs }: Durability,
): Promise<unknown> {
  const send = (source: boolean) =>
    (source
      ? redis.pipeline().eval(lua.source, keys.length, ...keys, ...args)
      : redis.pipeline().evalsha(lua.sha, keys.length, ...keys, ...args)
    )
      .wait(replicas, waitMs)
      .exec();
  let replies = await send(false);
  if (replies && isNoScript(replies[0]?.[0])) replies = await send(true);
  const [[error, result] = [null, undefined], [waitError, acknowledged] = [null, 0]] = replies ?? [];
  if (error) throw error;
  if (waitError) throw waitError;
  if (Number(acknowledged) < replicas)
    throw new AgoraError('STORE_UNAVAILABLE', undefined, {
      cause: new Error(`write reached ${String(acknowledged)} of ${replicas} replicas in ${waitMs} ms (WAIT)`),
    });
  return result;
}

/** A hash tag: every key naming the same tag sits in one cluster slot, so one script may touch them all. */
export function tag(text: string): string {
  return `{${text}}`;
}

/** Every key matching a glob, on every master of a cluster (SCAN sees one node only), deduplicated. */
export async function scanKeys(redis: RedisClient, pattern: string, call = <T>(run: () => Promise<T>) => run()) {
  const found = new Set<string>();
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await call(() => node.scan(cursor, 'MATCH', pattern, 'COUNT', 500));
      // SCAN may return a key more than once; the set deduplicates.
      for (const name of batch) found.add(name);
      cursor = next;
    } while (cursor !== '0');
  }
  return found;
}

/** A second connection to the same place (for blocking reads), without auto-pipelining. */
export function duplicate(redis: RedisClient): RedisClient {
  return redis instanceof Cluster
    ? redis.duplicate(undefined, { enableAutoPipelining: false })
    : redis.duplicate({ enableAutoPipelining: false });
}

/**
 * Ends a connection politely. QUIT fails ("Connection is closed") when the connection broke meanwhile, e.g. a
 * command still in flight at shutdown wrote after an earlier QUIT: then nothing is left to release, and a closing
 * agent must not fail (or crash the process) over it.
 */
export async function quit(redis: RedisClient): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}

/** Escapes Redis glob characters, so a prefix matches literally in SCAN. */
export function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

export function parseJson(raw: string | null): JsonValue | undefined {
  if (raw === null) return undefined;
  try {
    return JSON.parse(raw) as JsonValue;
  } catch {
    return undefined;
  }
}
