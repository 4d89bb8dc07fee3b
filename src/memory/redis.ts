import { escapeGlob, parseJson, quit, runScript, scanKeys, script, type RedisClient } from '../_redis.js';
import { openRedis, watchRedis, storeCall } from '../_redis-connection.js';
import type { JsonValue } from '../schemas.js';
import { checkKey, type AgentMemory } from './file.js';

/** KEYS: key. ARGV: expected value, '1' when the key existed, new value. */
const COMPARE_AND_SET = script(`
local current = redis.call('GET', KEYS[1])
if ARGV[2] == '0' then
  if current then return 0 end
elseif current ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], ARGV[3])
return 1
`);

/**
 * An agent memory in Redis, shared by every process of an agent: JSON values in string keys, counters as plain
 * integers so `increment` is one atomic INCRBY.
 */
export class RedisMemory implements AgentMemory {
  /** Shared by processes: what one keeps, another may change. */
  readonly shared = true;
  readonly #redis: RedisClient;
  readonly #owned: boolean;
  readonly #prefix: string;
  #closed = false;

  constructor(redis: RedisClient | string, options: { prefix?: string } = {}) {
    this.#owned = typeof redis === 'string';
    this.#redis = typeof redis === 'string' ? openRedis(redis) : redis;
    // A connection handed in is listened to as well: its errors must not become unhandled-error stacks.
    watchRedis(this.#redis, undefined);
    this.#prefix = options.prefix ?? 'agora:memory:';
  }

  #key(key: string): string {
    return `${this.#prefix}${checkKey(key)}`;
  }

  async get<T extends JsonValue = JsonValue>(key: string): Promise<T | undefined> {
    return parseJson(await storeCall(this.#redis, () => this.#redis.get(this.#key(key)))) as T | undefined;
  }

  async set(key: string, value: JsonValue): Promise<void> {
    await storeCall(this.#redis, () => this.#redis.set(this.#key(key), JSON.stringify(value)));
  }

  async delete(key: string): Promise<void> {
    await storeCall(this.#redis, () => this.#redis.del(this.#key(key)));
  }

  async keys(prefix: string): Promise<string[]> {
    const pattern = `${escapeGlob(this.#prefix + prefix)}*`;
    // On a cluster every master is scanned: keys spread over all of them.
    const found = await scanKeys(this.#redis, pattern, (run) => storeCall(this.#redis, run));
    return [...found].map((name) => name.slice(this.#prefix.length)).sort();
  }

  async increment(key: string, by = 1): Promise<number> {
    const name = this.#key(key);
    if (Number.isSafeInteger(by)) {
      try {
        return await storeCall(this.#redis, () => this.#redis.incrby(name, by));
      } catch (error) {
        if (!(error instanceof Error) || !error.message.includes('not an integer')) throw error;
      }
    }
    // The stored value is no integer (a fraction, another JSON value) or `by` is fractional: compare-and-set,
    // retried on conflict, keeps the update atomic with FileMemory's meaning (a non-number counts as 0).
    for (;;) {
      const raw = await storeCall(this.#redis, () => this.#redis.get(name));
      const current = parseJson(raw);
      const next = (typeof current === 'number' ? current : 0) + by;
      const swapped = await storeCall(this.#redis, () =>
        runScript(this.#redis, COMPARE_AND_SET, [name], [raw ?? '', raw === null ? '0' : '1', JSON.stringify(next)]),
      );
      if (swapped === 1) return next;
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#owned) await quit(this.#redis);
  }
}
