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
  now?: () => number;
};

const SESSION_ID = /^[0-9a-f-]{36}$/;

/** The MCP sessions of one agent, over its memory (files, or Redis shared by every process). */
export class McpSessions {
  readonly #memory: AgentMemory;
  readonly #idleMs: number;
  readonly #maxCached: number;
  readonly #now: () => number;
  // Sessions known live here, so a single-round call does not wait on a memory of this process alone.
  readonly #cache = new Map<string, number>();

  constructor(memory: AgentMemory, options: McpSessionOptions = {}) {
    this.#memory = memory;
    this.#idleMs = options.idleMs ?? 30 * 60_000;
    this.#maxCached = options.maxCached ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /** Opens a session and returns its id. */
  async open(): Promise<string> {
    const id = randomUUID();
    const expiresAt = this.#now() + this.#idleMs;
    await this.#memory.set(keyOf(id), { expiresAt, conversations: {} });
    this.#remember(id, expiresAt);
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
  return `mcp/sessions/${id}`;
}

function isRecord(value: unknown): value is SessionRecord {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Partial<SessionRecord>;
  return typeof record.expiresAt === 'number' && typeof record.conversations === 'object' && record.conversations !== null;
}
