// MCP sessions (`Mcp-Session-Id`) kept in the agent's memory, so with a Redis memory any process answers any session:
// each session holds the Agora conversations its multiround tools opened, and lives as long as they do.
import { randomUUID } from 'node:crypto';
import { isAgoraError } from '../../errors.js';
import type { AgentMemory } from '../../memory/file.js';
import type { ReceiverApi, RequestContext } from '../../receiver.js';
import type { JsonValue, SuccessResponse } from '../../schemas.js';

/** A session as kept: until when it lives, and the conversation of each tool that opened one. */
type SessionRecord = { expiresAt: number; conversations: Record<string, { id: string; expiresAt: number }> };

/** Options of {@link McpSessions}. */
export type McpSessionOptions = {
  /** How long a session with no live conversation lives after its last use, ms (default 30 minutes). */
  idleMs?: number;
  /** Sessions this process remembers without asking the memory (default 10 000). */
  maxCached?: number;
  /** Open sessions at most, across processes sharing the memory: an `initialize` past it is refused (default 10 000). */
  maxSessions?: number;
  /** How often abandoned (expired) sessions are swept from the memory while sessions are opened, ms (default 60 s). */
  sweepEveryMs?: number;
  now?: () => number;
};

const SESSION_ID = /^[0-9a-f-]{36}$/;
const SESSIONS = 'mcp/sessions/';
const SWEEP_BATCH = 16;

/** The MCP sessions of one agent, over its memory (files, or Redis shared by every process). */
export class McpSessions {
  readonly #memory: AgentMemory;
  readonly #idleMs: number;
  readonly #maxCached: number;
  readonly #now: () => number;
  // Sessions known live here, so a single-round call does not wait on a memory of this process alone.
  readonly #cache = new Map<string, number>();
  readonly #maxSessions: number;
  readonly #sweepEveryMs: number;
  /** Live sessions at the last sweep, plus those opened here since. */
  #count: number | undefined;
  #sweptAt = 0;
  #sweeping: Promise<void> | undefined;

  constructor(memory: AgentMemory, options: McpSessionOptions = {}) {
    this.#memory = memory;
    this.#idleMs = options.idleMs ?? 30 * 60_000;
    this.#maxCached = options.maxCached ?? 10_000;
    this.#maxSessions = options.maxSessions ?? 10_000;
    this.#sweepEveryMs = options.sweepEveryMs ?? 60_000;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Whether another session may open. The first call sweeps the memory (sessions left by an earlier run), later ones
   * sweep in the background at most every `sweepEveryMs`; a full count sweeps at once before refusing.
   */
  async hasRoom(): Promise<boolean> {
    if (this.#count === undefined) await this.#sweep();
    else if (this.#now() - this.#sweptAt >= this.#sweepEveryMs) void this.#sweep();
    if ((this.#count ?? 0) < this.#maxSessions) return true;
    await this.#sweep();
    return (this.#count ?? 0) < this.#maxSessions;
  }

  /** Deletes the expired sessions of the memory and counts the live ones (one sweep at a time). */
  #sweep(): Promise<void> {
    this.#sweeping ??= (async () => {
      this.#sweptAt = this.#now();
      const keys = await this.#memory.keys(SESSIONS);
      let live = 0;
      // A few reads at a time: a sweep of 10 000 sessions never holds many files or Redis replies at once.
      for (let index = 0; index < keys.length; index += SWEEP_BATCH) {
        const records = await Promise.all(keys.slice(index, index + SWEEP_BATCH).map((key) => this.#memory.get<JsonValue>(key).catch(() => undefined)));
        const expired = keys.slice(index, index + SWEEP_BATCH).filter((key, at) => {
          const record = records[at];
          const alive = isRecord(record) && record.expiresAt > this.#now();
          if (alive) live += 1;
          return !alive && record !== undefined;
        });
        await Promise.all(expired.map((key) => this.#memory.delete(key).catch(() => undefined)));
      }
      this.#count = live;
    })()
      .catch(() => undefined)
      .finally(() => {
        this.#sweeping = undefined;
      });
    return this.#sweeping;
  }

  /** Opens a session and returns its id. */
  async open(): Promise<string> {
    const id = randomUUID();
    const expiresAt = this.#now() + this.#idleMs;
    await this.#memory.set(keyOf(id), { expiresAt, conversations: {} });
    this.#remember(id, expiresAt);
    if (this.#count !== undefined) this.#count += 1;
    return id;
  }

  /** Whether a session is live (here, or in the shared memory). */
  async has(id: string): Promise<boolean> {
    if (!SESSION_ID.test(id)) return false;
    // A memory other processes share is asked every time: a session may have been ended by another process.
    const cached = this.#memory.shared ? undefined : this.#cache.get(id);
    if (cached !== undefined && cached > this.#now()) return true;
    return (await this.#read(id)) !== undefined;
  }

  /** Ends a session: forgets it and ends the conversations it opened. */
  async close(id: string, receiver: ReceiverApi): Promise<boolean> {
    const record = SESSION_ID.test(id) ? await this.#read(id) : undefined;
    this.#cache.delete(id);
    if (record === undefined) return false;
    await this.#memory.delete(keyOf(id));
    if (this.#count !== undefined && this.#count > 0) this.#count -= 1;
    await Promise.all(Object.values(record.conversations).map(({ id: conversation }) => receiver.end(conversation).catch(() => undefined)));
    return true;
  }

  /**
   * A tool's call in a session: the next turn of the conversation it opened there, else (none yet, or expired) a
   * new multiround query whose conversation the session keeps.
   */
  async turn(receiver: ReceiverApi, session: string, tool: string, query: { protocolHash?: string; body: JsonValue }, context?: RequestContext): Promise<SuccessResponse> {
    const record = (await this.#read(session)) ?? { expiresAt: 0, conversations: {} };
    const open = record.conversations[tool];
    if (open !== undefined && open.expiresAt > this.#now()) {
      try {
        const reply = await receiver.followUp(open.id, { body: query.body }, context);
        return await this.#keep(session, record, tool, reply, open.id);
      } catch (error) {
        if (!isAgoraError(error) || (error.code !== 'CONVERSATION_EXPIRED' && error.code !== 'CONVERSATION_NOT_FOUND')) throw error;
      }
    }
    const reply = await receiver.query({ ...query, multiround: true }, context);
    return this.#keep(session, record, tool, reply, reply.conversationId);
  }

  async #keep(session: string, record: SessionRecord, tool: string, reply: SuccessResponse, conversation: string | undefined): Promise<SuccessResponse> {
    const now = this.#now();
    if (conversation === undefined || reply.conversationExpires === undefined) delete record.conversations[tool];
    else record.conversations[tool] = { id: conversation, expiresAt: reply.conversationExpires * 1000 };
    // The session lives while its latest conversation does, and at least `idleMs` after its last use.
    const latest = Math.max(0, ...Object.values(record.conversations).map((entry) => entry.expiresAt));
    record.expiresAt = Math.max(now + this.#idleMs, latest);
    await this.#memory.set(keyOf(session), record as unknown as JsonValue);
    this.#remember(session, record.expiresAt);
    return reply;
  }

  async #read(id: string): Promise<SessionRecord | undefined> {
    const record = await this.#memory.get<JsonValue>(keyOf(id));
    if (!isRecord(record)) return undefined;
    if (record.expiresAt <= this.#now()) {
      this.#cache.delete(id);
      await this.#memory.delete(keyOf(id)).catch(() => undefined);
      return undefined;
    }
    this.#remember(id, record.expiresAt);
    return record;
  }

  #remember(id: string, expiresAt: number): void {
    this.#cache.delete(id);
    if (this.#cache.size >= this.#maxCached) {
      const oldest = this.#cache.keys().next().value;
      if (oldest !== undefined) this.#cache.delete(oldest);
    }
    this.#cache.set(id, expiresAt);
  }
}

function keyOf(id: string): string {
  return `${SESSIONS}${id}`;
}

function isRecord(value: unknown): value is SessionRecord {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Partial<SessionRecord>;
  return typeof record.expiresAt === 'number' && typeof record.conversations === 'object' && record.conversations !== null;
}
