// Internal: what the Redis backends share: the ioredis import, Lua scripts by SHA, polite shutdown.
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import type { JsonValue } from './schemas.js';

export { Redis };
export type { RedisOptions } from 'ioredis';

export type Script = { source: string; sha: string };

export function script(source: string): Script {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

/** Runs a Lua script by its SHA, sending the source only when the server does not know it yet. */
export async function runScript(
  redis: Redis,
  lua: Script,
  keys: string[],
  args: (string | number)[],
): Promise<unknown> {
  try {
    return await redis.evalsha(lua.sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
    return redis.eval(lua.source, keys.length, ...keys, ...args);
  }
}
/**
 * Ends a connection politely. QUIT fails ("Connection is closed") when the connection broke meanwhile, e.g. a
 * command still in flight at shutdown wrote after an earlier QUIT: then nothing is left to release, and a closing
 * agent must not fail (or crash the process) over it.
 */
export async function quit(redis: Redis): Promise<void> {
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
