// The events of streamed turns, kept with the conversations so a client that lost its stream can resume it.

/** What kind of event: a piece of the reply, the whole reply, or the failure. */
export type EventKind = 'delta' | 'done' | 'error';

/** One event of a streamed turn, as kept: `data` is the SSE data line, `turn` tells the turns of a conversation apart. */
export type StoredEvent = { id: number; turn: string; kind: EventKind; data: string };

/** An event to append: everything but its id, which the log gives. */
export type NewEvent = Omit<StoredEvent, 'id'>;

/** How much a log keeps per conversation. */
export type EventRetention = {
  /** Events kept per conversation, the latest (default {@link DEFAULT_MAX_EVENTS}). */
  maxEvents?: number;
  /** Bytes of event data kept per conversation, the latest (memory log only; default 1 MiB). */
  maxBytes?: number;
};

/** Events kept per conversation by default: a long LLM reply streamed token by token fits. */
export const DEFAULT_MAX_EVENTS = 5000;

/** Bytes of event data the memory log keeps per conversation by default. */
export const DEFAULT_MAX_EVENT_BYTES = 1024 * 1024;

/**
 * Where the events of streamed turns are kept: ids increase within a conversation and never repeat, also across
 * processes sharing a backend. Events leave by count, by size and with the conversation's expiry (`ttlMs` after
 * the latest append). Implementations: {@link MemoryEventLog} and `RedisEventLog` (`agora-agents/redis`).
 */
export interface ConversationEventLog {
  /** Appends an event to a conversation's log and resolves to its id. */
  append(conversationId: string, event: NewEvent, ttlMs: number): Promise<number>;
  /** The kept events with an id above `afterId`, oldest first (all kept events for 0). */
  after(conversationId: string, afterId: number): Promise<StoredEvent[]>;
  /** Resolves once an event above `afterId` may have been appended, after `timeoutMs`, or when `signal` aborts. */
  waitAfter(conversationId: string, afterId: number, timeoutMs: number, signal: AbortSignal): Promise<void>;
  /** Drops the logs of expired conversations. */
  sweep(): Promise<number>;
  /** Releases connections and wakes every waiter. */
  close(): Promise<void>;
}

/** Options of {@link MemoryEventLog}. */
export type MemoryEventLogOptions = EventRetention & {
  /** Clock in Unix milliseconds (injected in tests). */
  now?: () => number;
  /** How long a conversation's last id is remembered after its events expired, ms (default 1 hour). */
  counterMs?: number;
};

/** `expiresAt` is the events' expiry; the last id outlives them by `counterMs`, so a later turn never repeats ids. */
type Log = { events: StoredEvent[]; lastId: number; bytes: number; expiresAt: number; waiters: Set<() => void> };

/** The default event log: in this process's memory, swept with the memory store. */
export class MemoryEventLog implements ConversationEventLog {
  readonly #logs = new Map<string, Log>();
  readonly #now: () => number;
  readonly #maxEvents: number;
  readonly #maxBytes: number;
  readonly #counterMs: number;

  constructor(options: MemoryEventLogOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#counterMs = options.counterMs ?? 60 * 60 * 1000;
    this.#maxEvents = Math.max(1, options.maxEvents ?? DEFAULT_MAX_EVENTS);
    this.#maxBytes = Math.max(1, options.maxBytes ?? DEFAULT_MAX_EVENT_BYTES);
  }

  /** The log, its events emptied once expired; undefined when the conversation has none. */
  #log(conversationId: string): Log | undefined {
    const log = this.#logs.get(conversationId);
    if (log && log.expiresAt <= this.#now() && log.events.length) this.#expire(log);
    return log;
  }

  #expire(log: Log): void {
    log.events = [];
    log.bytes = 0;
    for (const wake of log.waiters) wake();
    log.waiters.clear();
  }

  async append(conversationId: string, event: NewEvent, ttlMs: number): Promise<number> {
    let log = this.#log(conversationId);
    if (!log) {
      log = { events: [], lastId: 0, bytes: 0, expiresAt: 0, waiters: new Set() };
      this.#logs.set(conversationId, log);
    }
    const stored: StoredEvent = { id: ++log.lastId, turn: event.turn, kind: event.kind, data: event.data };
    log.events.push(stored);
    log.bytes += stored.data.length;
    log.expiresAt = this.#now() + ttlMs;
    // The oldest go first; the newest event is always kept, however large.
    while (log.events.length > 1 && (log.events.length > this.#maxEvents || log.bytes > this.#maxBytes))
      log.bytes -= log.events.shift()!.data.length;
    for (const wake of log.waiters) wake();
    log.waiters.clear();
    return stored.id;
  }

  async after(conversationId: string, afterId: number): Promise<StoredEvent[]> {
    const events = this.#log(conversationId)?.events;
    if (!events?.length) return [];
    // Ids are consecutive, so the first event above `afterId` is found by arithmetic.
    const start = Math.max(0, afterId - events[0]!.id + 1);
    return events.slice(start);
  }

  waitAfter(conversationId: string, afterId: number, timeoutMs: number, signal: AbortSignal): Promise<void> {
    const log = this.#log(conversationId);
    if (!log || log.lastId > afterId || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        log.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal.addEventListener('abort', done, { once: true });
      log.waiters.add(done);
    });
  }

  async sweep(): Promise<number> {
    const now = this.#now();
    let dropped = 0;
    for (const [conversationId, log] of this.#logs) {
      if (log.expiresAt > now) continue;
      if (log.events.length) {
        this.#expire(log);
        dropped += 1;
      }
      if (log.expiresAt + this.#counterMs <= now) this.#logs.delete(conversationId);
    }
    return dropped;
  }

  async close(): Promise<void> {
    for (const log of this.#logs.values()) this.#expire(log);
    this.#logs.clear();
  }
}
