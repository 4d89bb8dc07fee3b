import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { KeyedQueue } from '../_queue.js';
import { quit, runScript, tag, type RedisClient } from '../_redis.js';
import { openRedis, watchRedis, redisReady, storeCall, type RedisLog } from '../_redis-connection.js';
import { AgoraError } from '../errors.js';
import { RedisMemory } from '../memory/redis.js';
import { ACQUIRE, CREATE, DELETE, INDEX, RELEASE, RENEW, SAVE_AND_RELEASE } from './_redis-lua.js';
import type { EventRetention } from './events.js';
import { RedisEventLog } from './redis-events.js';
import type { ConversationRecord, ConversationStore, TurnUpdate } from './store.js';

/** Options of {@link RedisConversationStore}. */
export type RedisStoreOptions = {
  /** Prefix of every key the store writes. Default `agora:`. */
  prefix?: string;
  /** How long an expired or ended conversation still answers "expired", ms (at least one TTL; default 1 hour). */
  tombstoneMs?: number;
  /** Lease of a turn's lock, ms: a crashed holder blocks the conversation at most this long. Default 30 s. */
  lockTtlMs?: number;
  /** How long a turn waits for the lock before failing with REQUEST_TIMEOUT, ms. Default 60 s. */
  lockWaitMs?: number;
  /** Clock in Unix milliseconds (injected in tests); decides expiry, Redis TTLs only collect garbage. */
  now?: () => number;
  /** The real-time waits of the lock: waiting for it and renewing its lease (injected in tests). */
  timers?: LockTimers;
  /** How many events of streamed turns are kept per conversation (`maxBytes` does not apply in Redis). */
  events?: Omit<EventRetention, 'maxBytes'>;
};

/** What the lock waits with: a monotonic clock in ms, a pause, a repeating tick. Default: performance.now() and timers. */
export type LockTimers = {
  now(): number;
  sleep(ms: number): Promise<void>;
  /** Calls `tick` every `ms` until the returned function is called. */
  every(ms: number, tick: () => Promise<unknown>): () => void;
};

const REAL_TIMERS: LockTimers = {
  now: () => performance.now(),
  sleep: (ms) => delay(ms),
  every(ms, tick) {
    const timer = setInterval(() => void tick(), ms);
    timer.unref();
    return () => clearInterval(timer);
  },
};

/**
 * Conversations in Redis, so any process sharing the server can take any turn; turns of one conversation are
 * serialized across processes by a fenced lease lock.
 * @example const store = new RedisConversationStore('redis://127.0.0.1:6379/0', { prefix: 'weather:' });
 */
export class RedisConversationStore implements ConversationStore {
  readonly #redis: RedisClient;
  readonly #owned: boolean;
  readonly #prefix: string;
  /** Sorted set of conversation ids scored by expiresAt, for count() and sweep(). */
  readonly #indexKey: string;
  readonly #tombstoneMs: number;
  readonly #lockTtlMs: number;
  readonly #lockWaitMs: number;
  readonly #now: () => number;
  readonly #timers: LockTimers;
  /** This process's turns per id, one at a time, so only one of them at a time polls Redis for the lock. */
  readonly #turns = new KeyedQueue<string>();
  #closed = false;
  /** The events of streamed turns, in Redis Streams beside the records. */
  readonly events: RedisEventLog;

  constructor(redis: RedisClient | string, options: RedisStoreOptions = {}) {
    this.#owned = typeof redis === 'string';
    this.#redis = typeof redis === 'string' ? openRedis(redis) : redis;
    // A connection handed in is listened to as well: its errors must not become unhandled-error stacks.
    watchRedis(this.#redis, undefined);
    this.#prefix = options.prefix ?? 'agora:';
    this.#indexKey = `${this.#prefix}conversations`;
    this.#tombstoneMs = options.tombstoneMs ?? 60 * 60 * 1000;
    this.#lockTtlMs = options.lockTtlMs ?? 30_000;
    this.#lockWaitMs = options.lockWaitMs ?? 60_000;
    this.#now = options.now ?? Date.now;
    this.#timers = options.timers ?? REAL_TIMERS;
    this.events = new RedisEventLog(this.#redis, {
      prefix: this.#prefix,
      counterMs: this.#tombstoneMs,
      ...options.events,
    });
  }

  // One conversation's keys share its id as hash tag: one cluster slot, so each script touches one slot.
  #keys(id: string) {
    return {
      record: `${this.#prefix}conversation:${tag(id)}`,
      tombstone: `${this.#prefix}tombstone:${tag(id)}`,
      lock: `${this.#prefix}lock:${tag(id)}`,
    };
  }

  /** Notes a conversation's expiry in the live index (its own key, so in a cluster its own slot). */
  async #index(id: string, expiresAt: number): Promise<void> {
    await storeCall(this.#redis, () => runScript(this.#redis, INDEX, [this.#indexKey], [id, expiresAt, this.#now()]));
  }

  /**
   * Redis TTL of a record: the tombstone period past the logical expiry, so the injected clock, not Redis, decides
   * when a conversation expires, and the record itself answers "expired" until then. (The tombstone key is only
   * written when a conversation is ended early: a turn writes one key less.)
   */
  #px(expiresAt: number): number {
    return Math.max(1, Math.ceil(Math.max(0, expiresAt - this.#now()) + this.#tombstoneMs));
  }

  async #read(id: string): Promise<ConversationRecord> {
    const keys = this.#keys(id);
    // One MGET, so the record and tombstone are seen at the same instant.
    const [raw, tombstone] = await storeCall(this.#redis, () => this.#redis.mget(keys.record, keys.tombstone));
    if (raw) {
      let record: ConversationRecord;
      try {
        record = JSON.parse(raw) as ConversationRecord;
      } catch (error) {
        throw new AgoraError('INTERNAL', `Corrupt conversation record in Redis: ${keys.record}`, { cause: error });
      }
      if (record.expiresAt > this.#now()) return record;
      throw new AgoraError('CONVERSATION_EXPIRED');
    }
    if (tombstone) throw new AgoraError('CONVERSATION_EXPIRED');
    throw new AgoraError('CONVERSATION_NOT_FOUND');
  }

  async create(record: ConversationRecord): Promise<void> {
    const keys = this.#keys(record.id);
    await storeCall(this.#redis, () =>
      runScript(this.#redis, CREATE, [keys.record], [JSON.stringify(record), this.#px(record.expiresAt)]),
    );
    await this.#index(record.id, record.expiresAt);
  }

  async get(id: string): Promise<ConversationRecord> {
    return this.#read(id);
  }

  async runTurn<T>(
    id: string,
    ttlMs: number,
    turn: (record: ConversationRecord) => Promise<TurnUpdate<T>>,
  ): Promise<T> {
    return this.#turns.run(id, () => this.#lockedTurn(id, ttlMs, turn));
  }

  // Two round trips a turn: lock and read in one script, save and release in another.
  async #lockedTurn<T>(
    id: string,
    ttlMs: number,
    turn: (record: ConversationRecord) => Promise<TurnUpdate<T>>,
  ): Promise<T> {
    const keys = this.#keys(id);
    const token = randomBytes(16).toString('base64url');
    const raw = await this.#acquireAndRead(keys, token);
    let current: ConversationRecord;
    try {
      current = JSON.parse(raw) as ConversationRecord;
    } catch (error) {
      await this.#release(keys.lock, token);
      throw new AgoraError('INTERNAL', `Corrupt conversation record in Redis: ${keys.record}`, { cause: error });
    }
    if (current.expiresAt <= this.#now()) {
      await this.#release(keys.lock, token);
      throw new AgoraError('CONVERSATION_EXPIRED');
    }
    // A turn may outlast the lease (a slow LLM); renewing keeps it ours while we are alive.
    // A failed renewal surfaces at the fenced save as a lost lock.
    const stopRenewal = this.#timers.every(Math.max(1, Math.floor(this.#lockTtlMs / 3)), () =>
      runScript(this.#redis, RENEW, [keys.lock], [token, this.#lockTtlMs]).catch(() => undefined),
    );
    let released = false;
    try {
      const { id: recordId, protocolHash, createdAt, turn: turns } = current;
      const update = await turn(current);
      const expiresAt = this.#now() + ttlMs;
      const record: ConversationRecord = {
        id: recordId,
        protocolHash,
        createdAt,
        expiresAt,
        turn: turns + 1,
        state: update.state,
        history: update.history,
      };
      const saved = await storeCall(this.#redis, () =>
        runScript(
          this.#redis,
          SAVE_AND_RELEASE,
          [keys.record, keys.lock],
          [token, JSON.stringify(record), this.#px(expiresAt)],
        ),
      );
      released = true;
      // Our lease expired and someone else may have taken a turn: saving now would overwrite theirs.
      if (saved === 0) throw new AgoraError('INTERNAL', 'Conversation lock lost');
      // The turn stands once saved: a missed index entry (its slot failing over) only undercounts until the next turn.
      if (saved === 1) await this.#index(id, expiresAt).catch(() => undefined);
      // saved === 2: ended during the turn; like the memory store, the answer stands and the end stays.
      return update.result;
    } finally {
      stopRenewal();
      if (!released) await this.#release(keys.lock, token);
    }
  }

  async #release(lock: string, token: string): Promise<void> {
    // A failed release is harmless: the lease runs out by itself.
    await runScript(this.#redis, RELEASE, [lock], [token]).catch(() => undefined);
  }

  /** Waits for the lock and returns the record's JSON; throws EXPIRED or NOT_FOUND when there is no record. */
  async #acquireAndRead(keys: { lock: string; record: string; tombstone: string }, token: string): Promise<string> {
    // Real time, not the injected clock: this bounds how long a caller actually blocks.
    const deadline = this.#timers.now() + this.#lockWaitMs;
    let pause = 5;
    for (;;) {
      const [status, value] = (await storeCall(this.#redis, () =>
        runScript(this.#redis, ACQUIRE, [keys.lock, keys.record, keys.tombstone], [token, this.#lockTtlMs]),
      )) as [number, string | number | undefined];
      if (status === 1) return value as string;
      if (status === 2) throw new AgoraError(value === 1 ? 'CONVERSATION_EXPIRED' : 'CONVERSATION_NOT_FOUND');
      const left = deadline - this.#timers.now();
      if (left <= 0) throw new AgoraError('REQUEST_TIMEOUT', 'Conversation busy');
      await this.#timers.sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, 50);
    }
  }

  async delete(id: string): Promise<boolean> {
    const keys = this.#keys(id);
    const live = await storeCall(this.#redis, () =>
      runScript(this.#redis, DELETE, [keys.record, keys.tombstone], [Math.max(1, this.#tombstoneMs), this.#now()]),
    );
    await storeCall(this.#redis, () => this.#redis.zrem(this.#indexKey, id));
    return live === 1;
  }

  async count(): Promise<number> {
    return storeCall(this.#redis, () => this.#redis.zcount(this.#indexKey, `(${this.#now()}`, '+inf'));
  }

  /** Drops expired conversations from the live index; their records and tombstones leave by Redis TTL. */
  async sweep(): Promise<number> {
    return storeCall(this.#redis, () => this.#redis.zremrangebyscore(this.#indexKey, '-inf', this.#now()));
  }

  /** Whether Redis answers now (a PING within the command timeout): what `GET /ready` reports. */
  async ready(): Promise<boolean> {
    if (this.#redis.status !== 'ready') return false;
    try {
      await this.#redis.ping();
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.events.close();
    if (this.#owned) await quit(this.#redis);
  }
}

/**
 * Creates a conversation store and an agent memory from one URL, sharing one connection; `ready()` waits for it
 * (and fails with STORE_UNAVAILABLE naming the address when Redis cannot be reached).
 * @example const { store, memory, close } = connectRedis('redis://127.0.0.1:6379/0');
 */
export function connectRedis(
  url: string,
  options: RedisStoreOptions & { memoryPrefix?: string; logger?: RedisLog } = {},
): {
  store: RedisConversationStore;
  memory: RedisMemory;
  redis: RedisClient;
  ready(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
} {
  // Commands time out and fail while disconnected, errors are listened to, reconnection is automatic.
  const redis = openRedis(url, options.logger);
  const store = new RedisConversationStore(redis, options);
  const memory = new RedisMemory(redis, { prefix: options.memoryPrefix ?? `${options.prefix ?? 'agora:'}memory:` });
  return {
    store,
    memory,
    redis,
    ready: (timeoutMs) => redisReady(redis, timeoutMs),
    async close() {
      await store.close();
      await memory.close();
      await quit(redis);
    },
  };
}
