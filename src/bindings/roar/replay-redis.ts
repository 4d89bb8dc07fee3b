import { openRedis, storeCall } from '../../_redis-connection.js';
import { quit, type RedisClient } from '../../_redis.js';
import type { ReplayGuard } from './replay.js';

/** A replay guard in Redis (`SET NX PX`), so every process of an agent refuses an id any of them has seen. */
export class RedisReplayGuard implements ReplayGuard {
  readonly #redis: RedisClient;
  readonly #owned: boolean;
  readonly #prefix: string;

  constructor(redis: RedisClient | string, options: { prefix?: string } = {}) {
    this.#owned = typeof redis === 'string';
    this.#redis = typeof redis === 'string' ? openRedis(redis) : redis;
    this.#prefix = options.prefix ?? 'agora:roar:seen:';
  }

  /** Redis unreachable is STORE_UNAVAILABLE (the face answers 503), refused at once while it is known down. */
  async firstSeen(id: string, ttlMs: number): Promise<boolean> {
    return (
      (await storeCall(this.#redis, () =>
        this.#redis.set(`${this.#prefix}${id}`, '1', 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX'),
      )) === 'OK'
    );
  }

  async close(): Promise<void> {
    if (this.#owned) await quit(this.#redis);
  }
}
