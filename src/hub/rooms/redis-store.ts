// Rooms kept in Redis: several hub processes share them, and a room whose process died is resumed by another
// once its lease runs out, at the turn it was on.
import { openRedis } from '../../_redis-connection.js';
import { quit, type RedisClient, runScript, script, tag } from '../../_redis.js';
import { CLAIM, RELEASE } from '../redis-lua.js';
import type { RoomEvent, RoomRecord } from './records.js';
import type { RoomStore } from './store.js';

// The set of open rooms is one key (one slot), a room's keys another slot: the cap is taken in the set first (one
// step, so two hub processes cannot both take the last place), then the record is written. KEYS: open set.
// ARGV: id, cap, '1' when the room exists already (an existing room is never refused).
const ADMIT = script(`
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 1 end
if ARGV[3] == '0' and redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('SADD', KEYS[1], ARGV[1])
return 1`);

const APPEND = script(
  `
local id = redis.call('INCR', KEYS[2])
redis.call('RPUSH', KEYS[1], id .. ' ' .. ARGV[1] .. ' ' .. ARGV[2])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[3]), -1)
return id`,
  { durable: true },
);

// Events after a cursor: ids are consecutive in a room's list (one counter, trimmed from the front), so the first
// item's id says where the cursor's successor is; only those items leave Redis.
const EVENTS_AFTER = script(`
local first = redis.call('LINDEX', KEYS[1], 0)
if not first then return {} end
local start = tonumber(ARGV[1]) - tonumber(string.match(first, '^(%d+)')) + 1
if start < 0 then start = 0 end
return redis.call('LRANGE', KEYS[1], start, -1)`);

/** Options of {@link RedisRoomStore}. */
export type RedisRoomStoreOptions = {
  /** A Redis URL (connected here, closed on close) or a connection (left open). */
  url: string | RedisClient;
  prefix?: string;
  maxEventsPerRoom?: number;
  logger?: { error(message: string): void };
};

/** Rooms in Redis, shared by every hub process on it. */
export class RedisRoomStore implements RoomStore {
  readonly #redis: RedisClient;
  readonly #owned: boolean;
  readonly #prefix: string;
  readonly #maxEvents: number;

  constructor(options: RedisRoomStoreOptions) {
    // As every connection of the framework: commands time out, an outage is reported once (not at every retry).
    const logger = options.logger;
    this.#owned = typeof options.url === 'string';
    this.#redis =
      typeof options.url === 'string'
        ? openRedis(
            options.url,
            logger && { warn: (message) => logger.error(`rooms Redis: ${message}`), info: () => {} },
          )
        : options.url;
    this.#prefix = options.prefix ?? 'agora-hub:';
    this.#maxEvents = options.maxEventsPerRoom ?? 5000;
  }

  // A room's keys share its id as hash tag: one cluster slot for its record, events, counter and lease.
  #key(id: string, part = ''): string {
    return `${this.#prefix}room:${tag(id)}${part}`;
  }

  async get(id: string): Promise<RoomRecord | undefined> {
    const text = await this.#redis.get(this.#key(id));
    return text === null ? undefined : (JSON.parse(text) as RoomRecord);
  }

  async put(record: RoomRecord, cap: number): Promise<boolean> {
    const open = record.state === 'active' || record.state === 'paused';
    const key = this.#key(record.id);
    const openSet = `${this.#prefix}rooms:open`;
    if (open) {
      const exists = (await this.#redis.exists(key)) === 1 ? '1' : '0';
      const admitted = await runScript(this.#redis, ADMIT, [openSet], [record.id, Math.min(cap, 1e15), exists]);
      if (admitted !== 1) return false;
    }
    await this.#redis.set(key, JSON.stringify(record));
    // Closed after its record says so: a process that reads the open set never finds a room it cannot load.
    if (!open) await this.#redis.srem(openSet, record.id);
    return true;
  }

  async append(roomId: string, type: RoomEvent['type'], data: RoomEvent['data']): Promise<RoomEvent> {
    const id = Number(
      await runScript(
        this.#redis,
        APPEND,
        [this.#key(roomId, ':events'), this.#key(roomId, ':seq')],
        [type, JSON.stringify(data), this.#maxEvents],
      ),
    );
    return { id, type, data };
  }

  async events(roomId: string, afterId: number): Promise<RoomEvent[]> {
    const items = (await runScript(this.#redis, EVENTS_AFTER, [this.#key(roomId, ':events')], [afterId])) as string[];
    // Each item is `<id> <type> <data JSON>`, written by APPEND (no re-encoding of the data in Lua).
    const events: RoomEvent[] = [];
    for (const item of items) {
      const first = item.indexOf(' ');
      const second = item.indexOf(' ', first + 1);
      const id = Number(item.slice(0, first));
      if (id > afterId)
        events.push({
          id,
          type: item.slice(first + 1, second) as RoomEvent['type'],
          data: JSON.parse(item.slice(second + 1)) as RoomEvent['data'],
        });
    }
    return events;
  }

  async openRooms(): Promise<string[]> {
    return this.#redis.smembers(`${this.#prefix}rooms:open`);
  }

  async claim(roomId: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await runScript(this.#redis, CLAIM, [this.#key(roomId, ':runner')], [owner, Math.ceil(ttlMs)])) === 1;
  }

  async release(roomId: string, owner: string): Promise<void> {
    await runScript(this.#redis, RELEASE, [this.#key(roomId, ':runner')], [owner]);
  }

  async close(): Promise<void> {
    if (this.#owned) await quit(this.#redis);
  }
}
