import { KeyedQueue } from '../_queue.js';
import { AgoraError } from '../errors.js';
import type { JsonObject, JsonValue } from '../schemas.js';
import { ExpiryIndex } from './_expiry.js';
import { ShardedMap } from './_sharded.js';
import { Tombstones } from './_tombstones.js';
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
  /** The same, at once, when the store keeps it as a counter (what `maxConversations` reserves against). */
  countNow?(): number;
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
  /** Sweep period in ms; 0 disables the timer (call `sweep()` yourself). Default 1 s (a sweep costs what expired). */
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

/** Expired conversations buried per slice of a sweep: a few ms of work, then the event loop gets a turn. */
const SWEEP_SLICE = 1024;
/** Due conversations a count buries on its way (keeps the count exact at a steady rate without walking anything). */
const COUNT_SLICE = 256;

/**
 * The default store: conversations in this process's memory. Expiry costs what expires: live conversations are kept
 * in order of expiry ({@link ExpiryIndex}) and swept in slices that give the event loop a turn between them; the
 * live count and the count per protocol are counters; tombstones are 64-bit hashes dropped a generation at a time.
 */
export class MemoryConversationStore implements ConversationStore {
  readonly #now: () => number;
  readonly #live = new ShardedMap<Entry>();
  readonly #expiry = new ExpiryIndex();
  readonly #tombstones: Tombstones;
  readonly #tombstoneMs: number;
  /** Conversations not yet buried, per protocol hash (`null`: natural language). */
  readonly #byProtocol = new Map<string | null, number>();
  /** Turns of one conversation, one at a time; a drained queue holds nothing, so an idle conversation holds no promise. */
  readonly #turns = new KeyedQueue<string>();
  readonly #timer: NodeJS.Timeout | undefined;
  #sweeping: Promise<number> | undefined;
  /** The events of streamed turns, swept with the conversations. */
  readonly events: MemoryEventLog;

  constructor(options: MemoryConversationStoreOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#tombstoneMs = options.tombstoneMs ?? 60 * 60 * 1000;
    this.#tombstones = new Tombstones(this.#tombstoneMs);
    this.events = new MemoryEventLog({ ...options.events, now: this.#now, counterMs: this.#tombstoneMs });
    const interval = options.sweepIntervalMs ?? 1000;
    if (interval > 0) {
      this.#timer = setInterval(() => void this.sweep(), interval);
      this.#timer.unref();
    }
  }

  async create(record: ConversationRecord): Promise<void> {
    const previous = this.#live.get(record.id);
    if (previous) this.#forget(previous);
    this.#live.set(record.id, {
      json: JSON.stringify(record),
      expiresAt: record.expiresAt,
      protocolHash: record.protocolHash,
    });
    this.#expiry.add(record.id, record.expiresAt);
    this.#byProtocol.set(record.protocolHash, (this.#byProtocol.get(record.protocolHash) ?? 0) + 1);
  }

  #entry(id: string): Entry {
    const entry = this.#live.get(id);
    if (entry) {
      if (entry.expiresAt > this.#now()) return entry;
      this.#bury(id, entry, entry.expiresAt);
      throw new AgoraError('CONVERSATION_EXPIRED');
    }
    if (this.#tombstones.has(id)) throw new AgoraError('CONVERSATION_EXPIRED');
    throw new AgoraError('CONVERSATION_NOT_FOUND');
  }

  /** Takes an entry out of the counters and the expiry index. */
  #forget(entry: Entry): void {
    this.#expiry.remove(entry.expiresAt);
    this.#uncount(entry.protocolHash);
  }

  #uncount(protocolHash: string | null): void {
    const left = (this.#byProtocol.get(protocolHash) ?? 1) - 1;
    if (left > 0) this.#byProtocol.set(protocolHash, left);
    else this.#byProtocol.delete(protocolHash);
  }

  #bury(id: string, entry: Entry, since: number): void {
    this.#live.delete(id);
    this.#forget(entry);
    this.#tombstones.add(id, Math.max(since, this.#now()) + this.#tombstoneMs);
  }

  /** Buries at most `limit` conversations due at `now`; returns how many ids were looked at. */
  #expireDue(now: number, limit: number, buried: { count: number }): number {
    return this.#expiry.take(now, limit, (id, at) => {
      const entry = this.#live.get(id);
      if (!entry || entry.expiresAt !== at) return false;
      // The index counts this one itself (take decrements it): only the map and the per-protocol counter change here.
      this.#live.delete(id);
      this.#uncount(entry.protocolHash);
      this.#tombstones.add(id, Math.max(at, now) + this.#tombstoneMs);
      buried.count += 1;
      return true;
    });
  }

  async get(id: string): Promise<ConversationRecord> {
    return JSON.parse(this.#entry(id).json) as ConversationRecord;
  }

  async runTurn<T>(
    id: string,
    ttlMs: number,
    turn: (record: ConversationRecord) => Promise<TurnUpdate<T>>,
  ): Promise<T> {
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
      if (record.expiresAt !== current.expiresAt) {
        this.#expiry.remove(current.expiresAt);
        this.#expiry.add(id, record.expiresAt);
        current.expiresAt = record.expiresAt;
      }
      return update.result;
    });
  }

  async delete(id: string): Promise<boolean> {
    const entry = this.#live.get(id);
    if (!entry) return false;
    // An entry past its expiry is not live, even before a sweep buried it: it ends as expired.
    const live = entry.expiresAt > this.#now();
    this.#bury(id, entry, live ? this.#now() : entry.expiresAt);
    return live;
  }

  /** A counter, less what is due and not buried yet (a walk of the instants due since the last sweep, no more). */
  async count(): Promise<number> {
    const now = this.#now();
    return this.#live.size - this.#expiry.due(now);
  }

  /**
   * The live count, at once, for the conversation cap: buries a few due conversations on its way, so at a steady rate
   * nothing is left to subtract (after a burst the sweep's slices catch up).
   */
  countNow(): number {
    const now = this.#now();
    this.#expireDue(now, COUNT_SLICE, { count: 0 });
    return this.#live.size - this.#expiry.due(now);
  }

  /** Counters per protocol (a conversation expired since the last sweep slice may still be counted). */
  async countByProtocol(): Promise<Map<string | null, number>> {
    return new Map(this.#byProtocol);
  }

  /** Tombstones held and the bytes of their tables. */
  tombstones(): { count: number; bytes: number } {
    return this.#tombstones.size();
  }

  /**
   * Buries what has expired, in slices of a few ms with a turn of the event loop between them, and drops tombstone
   * generations past their time; returns how many conversations and tombstones went. Concurrent calls share one sweep.
   */
  sweep(): Promise<number> {
    this.#sweeping ??= this.#sweepInSlices().finally(() => {
      this.#sweeping = undefined;
    });
    return this.#sweeping;
  }

  async #sweepInSlices(): Promise<number> {
    const buried = { count: 0 };
    while (this.#expireDue(this.#now(), SWEEP_SLICE, buried) === SWEEP_SLICE) await new Promise(setImmediate);
    return buried.count + this.#tombstones.drop(this.#now()) + (await this.events.sweep());
  }

  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    await this.events.close();
  }
}
