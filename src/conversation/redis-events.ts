import { setTimeout as delay } from 'node:timers/promises';
import { duplicate, quit, runScript, script, tag, type RedisClient } from '../_redis.js';
import {
  DEFAULT_MAX_EVENTS,
  type ConversationEventLog,
  type EventKind,
  type NewEvent,
  type StoredEvent,
} from './events.js';

/** Options of {@link RedisEventLog}. */
export type RedisEventLogOptions = {
  /** Prefix of every key (default `agora:`). */
  prefix?: string;
  /** Events kept per conversation, the latest (Redis `XADD … MAXLEN`; default 5000). */
  maxEvents?: number;
  /** How long a conversation's last id outlives its events, ms (default 1 hour), so later turns never repeat ids. */
  counterMs?: number;
  /** Connections blocked in `XREAD` for live followers at most; beyond, followers poll every 250 ms (default 32). */
  maxBlockingConnections?: number;
};

/**
 * KEYS: stream, counter. ARGV: turn, kind, data, maxEvents, eventsPx, counterPx. The id comes from INCR in the same
 * script as the XADD, so ids are consecutive and never repeat, whichever process appends.
 */
const APPEND = script(`
local n = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[4], n .. '-0', 't', ARGV[1], 'k', ARGV[2], 'd', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
return n
`);

const POLL_MS = 250;
type Entry = [id: string, fields: string[]];

function toEvent([id, fields]: Entry): StoredEvent {
  const values: Record<string, string> = {};
  for (let index = 0; index + 1 < fields.length; index += 2) values[fields[index]!] = fields[index + 1]!;
  return {
    id: Number.parseInt(id, 10),
    turn: values.t ?? '',
    kind: (values.k ?? 'delta') as EventKind,
    data: values.d ?? '',
  };
}

/**
 * The events of streamed turns in Redis Streams (one stream per conversation), so a client may resume on any
 * process sharing the server. Live followers block in `XREAD` on connections of their own.
 * @example const events = new RedisEventLog(redis, { prefix: 'weather:' });
 */
export class RedisEventLog implements ConversationEventLog {
  readonly #redis: RedisClient;
  readonly #prefix: string;
  readonly #maxEvents: number;
  readonly #counterMs: number;
  readonly #maxBlocking: number;
  /** Blocking connections not in use; `#blocking` counts all of them. */
  readonly #idle: RedisClient[] = [];
  readonly #busy = new Set<RedisClient>();
  #closed = false;

  constructor(redis: RedisClient, options: RedisEventLogOptions = {}) {
    this.#redis = redis;
    this.#prefix = options.prefix ?? 'agora:';
    this.#maxEvents = Math.max(1, options.maxEvents ?? DEFAULT_MAX_EVENTS);
    this.#counterMs = options.counterMs ?? 60 * 60 * 1000;
    this.#maxBlocking = Math.max(0, options.maxBlockingConnections ?? 32);
  }

  // A conversation's stream and counter share its id as hash tag (one cluster slot), as its record does.
  #stream(conversationId: string): string {
    return `${this.#prefix}events:${tag(conversationId)}`;
  }

  async append(conversationId: string, event: NewEvent, ttlMs: number): Promise<number> {
    const px = Math.max(1, Math.ceil(ttlMs));
    const id = await runScript(
      this.#redis,
      APPEND,
      [this.#stream(conversationId), `${this.#prefix}events-last:${tag(conversationId)}`],
      [event.turn, event.kind, event.data, this.#maxEvents, px, px + this.#counterMs],
    );
    return Number(id);
  }

  async after(conversationId: string, afterId: number): Promise<StoredEvent[]> {
    // Ids are `n-0`, so `n-1` is the first id above n (XRANGE's exclusive `(` needs Redis 6.2).
    const entries = (await this.#redis.xrange(this.#stream(conversationId), `${afterId}-1`, '+')) as Entry[];
    return entries.map(toEvent);
  }

  async waitAfter(conversationId: string, afterId: number, timeoutMs: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted || this.#closed) return;
    const connection = this.#take();
    if (!connection) {
      // Every blocking connection is taken: poll instead, bounded like a block.
      await delay(Math.min(POLL_MS, timeoutMs), undefined, { signal }).catch(() => undefined);
      return;
    }
    // An abort cannot interrupt XREAD BLOCK: the connection is dropped instead.
    const onAbort = () => connection.disconnect();
    signal.addEventListener('abort', onAbort, { once: true });
    let healthy = true;
    try {
      await connection.xread(
        'COUNT',
        1,
        'BLOCK',
        Math.max(1, Math.ceil(timeoutMs)),
        'STREAMS',
        this.#stream(conversationId),
        `${afterId}-0`,
      );
    } catch {
      healthy = false;
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.#busy.delete(connection);
      if (healthy && !signal.aborted && !this.#closed) this.#idle.push(connection);
      else connection.disconnect();
    }
  }

  #take(): RedisClient | undefined {
    let connection = this.#idle.pop();
    if (!connection && this.#busy.size < this.#maxBlocking) connection = duplicate(this.#redis);
    if (connection) this.#busy.add(connection);
    return connection;
  }

  /** Nothing to do: streams leave by their Redis TTL. */
  async sweep(): Promise<number> {
    return 0;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const connection of this.#busy) connection.disconnect();
    this.#busy.clear();
    await Promise.all(this.#idle.splice(0).map((connection) => quit(connection)));
  }
}
