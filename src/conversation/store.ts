import { KeyedQueue } from '../_queue.js';
import { AgoraError } from '../errors.js';
import type { JsonObject, JsonValue } from '../schemas.js';
import { MemoryEventLog, type ConversationEventLog, type EventRetention } from './events.js';

/** One message of a conversation's history, as the receiver saw it. */
export type ConversationMessage = { role: 'peer' | 'agent'; body: JsonValue };

/** A live conversation, as stored. */
export type ConversationRecord = {
  id: string;
  /** The conversation's protocol hash (hex), or null for natural language. */
  protocolHash: string | null;
  /** Unix milliseconds. */
  createdAt: number;
  /** Unix milliseconds; pushed forward by every turn (sliding expiry). */
  expiresAt: number;
  /** Turns completed so far (the first query is turn 1). */
  turn: number;
  /** The routine's JSON state, persisted across turns. */
  state: JsonObject;
  /** Peer and agent messages so far (used by the LLM responders). */
  history: ConversationMessage[];
};

/** What a turn hands back to the store to save. */
export type TurnUpdate<T> = { result: T; state: JsonObject; history: ConversationMessage[] };

/**
 * Where conversations live. Any process holding the same store can take any turn.
 * Implementations: {@link MemoryConversationStore} (default) and `RedisConversationStore` (`agora-agents/redis`).
 */
export interface ConversationStore {
  /** Saves a new conversation after its first turn. */
  create(record: ConversationRecord): Promise<void>;
  /** Reads a conversation without taking a turn; throws CONVERSATION_EXPIRED or CONVERSATION_NOT_FOUND. */
  get(id: string): Promise<ConversationRecord>;
  /**
   * Runs one turn under the conversation's lock, so turns of one conversation never interleave
   * (also across processes for shared stores). On success saves state and history, increments `turn`
   * and slides the expiry by `ttlMs`; when `turn` throws, nothing is saved.
   * Throws CONVERSATION_EXPIRED or CONVERSATION_NOT_FOUND.
   */
  runTurn<T>(id: string, ttlMs: number, turn: (record: ConversationRecord) => Promise<TurnUpdate<T>>): Promise<T>;
  /** Ends a conversation (it leaves a tombstone); false when it was not live. */
  delete(id: string): Promise<boolean>;
  /** Number of live conversations. */
  count(): Promise<number>;
  /** Live conversations per protocol hash (`null`: natural language), for the dashboard; absent when costly. */
  countByProtocol?(): Promise<Map<string | null, number>>;
  /** Drops expired conversations and old tombstones; returns how many entries were dropped. */
  sweep(): Promise<number>;
  /** Releases timers and connections. */
  close(): Promise<void>;
  /** The events of streamed turns, kept with the conversations (a store without it streams without resumption). */
  readonly events?: ConversationEventLog;
  /** Whether the store can answer now (`GET /ready`); a store without it is always ready. */
  ready?(): Promise<boolean>;
}

/** Options of the in-memory store. */
export type MemoryConversationStoreOptions = {
  /** Clock in Unix milliseconds (injected in tests). */
  now?: () => number;
  /** How long a tombstone is kept after expiry, ms (at least one TTL; default 1 hour). */
  tombstoneMs?: number;
  /** Sweep period in ms; 0 disables the timer (call `sweep()` yourself). Default 30 s. */
  sweepIntervalMs?: number;
  /** How many events of streamed turns are kept per conversation. */
  events?: EventRetention;
};

type Entry = {
  /** The record as JSON: copying many small objects with structuredClone costs far more than a parse, and a
   * string is the most compact way to keep an idle conversation. */
  json: string;
  expiresAt: number;
  protocolHash: ConversationRecord['protocolHash'];
};

/** The default store: conversations in this process's memory, swept periodically. */
export class MemoryConversationStore implements ConversationStore {
  readonly #now: () => number;
  readonly #tombstoneMs: number;
  readonly #live = new Map<string, Entry>();
  /** id → Unix ms after which the tombstone itself may go. */
  readonly #tombstones = new Map<string, number>();
  /** Turns of one conversation, one at a time; a drained queue holds nothing, so an idle conversation holds no promise. */
  readonly #turns = new KeyedQueue<string>();
  readonly #timer: NodeJS.Timeout | undefined;
  /** The events of streamed turns, swept with the conversations. */
  readonly events: MemoryEventLog;

  constructor(options: MemoryConversationStoreOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#tombstoneMs = options.tombstoneMs ?? 60 * 60 * 1000;
    this.events = new MemoryEventLog({ ...options.events, now: this.#now, counterMs: this.#tombstoneMs });
    const interval = options.sweepIntervalMs ?? 30_000;
    if (interval > 0) {
      this.#timer = setInterval(() => void this.sweep(), interval);
      this.#timer.unref();
    }
  }

  async create(record: ConversationRecord): Promise<void> {
    this.#live.set(record.id, { json: JSON.stringify(record), expiresAt: record.expiresAt, protocolHash: record.protocolHash });
  }

  #entry(id: string): Entry {
    const entry = this.#live.get(id);
    if (entry) {
      if (entry.expiresAt > this.#now()) return entry;
      this.#bury(id, entry.expiresAt);
      throw new AgoraError('CONVERSATION_EXPIRED');
    }
    if (this.#tombstones.has(id)) throw new AgoraError('CONVERSATION_EXPIRED');
    throw new AgoraError('CONVERSATION_NOT_FOUND');
  }

  #bury(id: string, since: number): void {
    this.#live.delete(id);
    this.#tombstones.set(id, Math.max(since, this.#now()) + this.#tombstoneMs);
  }

  async get(id: string): Promise<ConversationRecord> {
    return JSON.parse(this.#entry(id).json) as ConversationRecord;
  }

  async runTurn<T>(id: string, ttlMs: number, turn: (record: ConversationRecord) => Promise<TurnUpdate<T>>): Promise<T> {
    // Fails at once for an ended conversation, rather than after the turns queued before it.
    this.#entry(id);
    return this.#turns.run(id, async () => {
      // Re-check after waiting: the conversation may have expired or ended meanwhile.
      const current = this.#entry(id);
      const record = JSON.parse(current.json) as ConversationRecord;
      const { id: recordId, protocolHash, createdAt, turn: turns } = record;
      const update = await turn(record);
      if (this.#live.get(id) !== current) return update.result; // ended during the turn: nothing to save
      // The turn may have mutated what it was handed: only state and history are taken from it.
      record.id = recordId;
      record.protocolHash = protocolHash;
      record.createdAt = createdAt;
      record.turn = turns;
      record.state = update.state;
      record.history = update.history;
      record.turn += 1;
      record.expiresAt = this.#now() + ttlMs;
      current.json = JSON.stringify(record);
      current.expiresAt = record.expiresAt;
      return update.result;
    });
  }

  async delete(id: string): Promise<boolean> {
    const entry = this.#live.get(id);
    if (!entry) return false;
    // An entry past its expiry is not live, even before a sweep buried it: it ends as expired.
    const live = entry.expiresAt > this.#now();
    this.#bury(id, live ? this.#now() : entry.expiresAt);
    return live;
  }

  async count(): Promise<number> {
    const now = this.#now();
    let live = 0;
    for (const entry of this.#live.values()) if (entry.expiresAt > now) live += 1;
    return live;
  }

  async countByProtocol(): Promise<Map<string | null, number>> {
    const now = this.#now();
    const counts = new Map<string | null, number>();
    for (const entry of this.#live.values()) if (entry.expiresAt > now) counts.set(entry.protocolHash, (counts.get(entry.protocolHash) ?? 0) + 1);
    return counts;
  }

  async sweep(): Promise<number> {
    const now = this.#now();
    let dropped = 0;
    for (const [id, entry] of this.#live) {
      if (entry.expiresAt <= now) {
        this.#bury(id, entry.expiresAt);
        dropped += 1;
      }
    }
    for (const [id, until] of this.#tombstones) {
      if (until <= now) {
        this.#tombstones.delete(id);
        dropped += 1;
      }
    }
    return dropped + (await this.events.sweep());
  }

  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await this.events.close();
  }
}
