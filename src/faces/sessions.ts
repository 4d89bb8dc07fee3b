// Face sessions, one design for every face: a client's conversation id (A2A `contextId`, ROAR `context.session_id`,
// MCP `Mcp-Session-Id`) and the Agora conversations it stands for, one per protocol (an MCP tool). They are kept in
// the agent's memory when other processes share it (Redis: any worker answers any session, and a restarted worker
// finds them), in this process otherwise (its conversations live here too). A session belongs to its caller: its key
// holds the caller's principal (a token's digest, a verified ROAR signer), so two callers who pick the same id have
// separate conversations, and one caller cannot continue, read or end another's.
import { createHash } from 'node:crypto';
import { bearerToken } from '../edge/guard.js';
import { header, type EdgeRequest } from '../edge/request.js';
import { KeyedQueue } from '../_queue.js';
import { AgoraError, isAgoraError } from '../errors.js';
import type { AgentMemory } from '../memory/file.js';
import { normalizeHash, parseDocument } from '../protocol/document.js';
import type { ReceiverApi, RequestContext } from '../receiver.js';
import type { JsonValue, QueryRequest, SuccessResponse } from '../schemas.js';

/** A session as kept: until when it lives, and the conversation of each protocol (lane) it opened. */
type SessionRecord = { expiresAt: number; conversations: Record<string, { id: string; expiresAt: number }> };

/** Options of {@link FaceSessions}. */
export type FaceSessionOptions = {
  /**
   * How long a session lives after its last use when it holds no live conversation, ms (default 0: as long as its
   * conversations; MCP's sessions, opened before any call, use 30 minutes).
   */
  idleMs?: number;
  /** Open sessions at most, across processes sharing the memory: a new one past it is refused (default 10 000). */
  maxSessions?: number;
  /** Conversations one session holds at once, one per protocol (default 32): a new protocol past it is refused. */
  maxConversations?: number;
  /** How often expired sessions are swept from the memory while sessions are opened, ms (default 60 s). */
  sweepEveryMs?: number;
  now?: () => number;
};

/** The memory key prefix of the sessions. */
export const SESSIONS_PREFIX = 'sessions/';
const SWEEP_BATCH = 16;
// A full table is swept again at most this often: a stranger knocking at the cap does not make every request a sweep.
const FULL_SWEEP_MS = 1000;
// Protocols whose kind (multiround or not) is remembered.
const MAX_KNOWN_PROTOCOLS = 1024;

/**
 * A session's key: the caller's principal (`""` for an anonymous caller) and the id the client holds.
 * @example sessionKey(tokenScope(request.headers.authorization), contextId)
 */
export function sessionKey(principal: string | undefined, id: string): string {
  return `${principal ?? ''}\n${id}`;
}

/** A caller's principal from a bearer token (`Bearer …` or the bare token): its digest, `undefined` without one. */
export function tokenScope(token: string | undefined): string | undefined {
  const bare = (bearerToken(token) ?? token)?.trim();
  return bare ? `token:${createHash('sha256').update(bare).digest('base64url')}` : undefined;
}

/**
 * A request's caller, whose sessions and contexts are its own: the principal the edge's guard found (an access
 * token's subject), else, when the edge asks for tokens, its bearer token's digest; `undefined` for anyone.
 */
export function callerOf(
  request: Pick<EdgeRequest, 'headers' | 'principal'>,
  tokensRequired: boolean,
): string | undefined {
  return request.principal ?? (tokensRequired ? tokenScope(header(request, 'authorization')) : undefined);
}

/**
 * This process's sessions: a map whose records are neither copied nor their keys digested. A memory others share
 * (Redis) needs both; here only this class reads them, and a record it changes it writes back at once.
 */
class ProcessRecords implements Pick<AgentMemory, 'get' | 'set' | 'delete' | 'keys'> {
  readonly #records = new Map<string, JsonValue>();
  async get<T extends JsonValue = JsonValue>(key: string): Promise<T | undefined> {
    return this.#records.get(key) as T | undefined;
  }
  async set(key: string, value: JsonValue): Promise<void> {
    this.#records.set(key, value);
  }
  async delete(key: string): Promise<void> {
    this.#records.delete(key);
  }
  async keys(prefix: string): Promise<string[]> {
    return [...this.#records.keys()].filter((key) => key.startsWith(prefix));
  }
}

/** The sessions of one face, over a memory. */
export class FaceSessions {
  readonly #prefix: string;
  readonly #memory: Pick<AgentMemory, 'get' | 'set' | 'delete' | 'keys'>;
  readonly #shared: boolean;
  readonly #idleMs: number;
  readonly #maxSessions: number;
  readonly #maxConversations: number;
  readonly #sweepEveryMs: number;
  readonly #now: () => number;
  // One turn at a time per session in this process: a second message waits for the first to open the conversation.
  readonly #turns = new KeyedQueue<string>();
  /** Live sessions at the last sweep, plus those opened here since. */
  #count: number | undefined;
  #sweptAt = -Infinity;
  #sweeping: Promise<void> | undefined;
  // Whether each protocol seen keeps conversations (its document's `multiround`), by hex hash; bounded.
  readonly #multiround = new Map<string, boolean>();

  /** Sessions over `memory` when other processes share it, else over this process's own map. */
  constructor(face: string, memory: AgentMemory | undefined, options: FaceSessionOptions = {}) {
    this.#prefix = `${SESSIONS_PREFIX}${face.replace(/[^a-z0-9-]/g, '') || 'face'}/`;
    this.#shared = memory?.shared === true;
    this.#memory = memory?.shared ? memory : new ProcessRecords();
    this.#idleMs = options.idleMs ?? 0;
    this.#maxSessions = options.maxSessions ?? 10_000;
    this.#maxConversations = options.maxConversations ?? 32;
    this.#sweepEveryMs = options.sweepEveryMs ?? 60_000;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Whether another session may open. The first call sweeps the memory (sessions left by an earlier run), later ones
   * sweep in the background at most every `sweepEveryMs`; a full count sweeps first (at most once a second) before
   * refusing.
   */
  async hasRoom(): Promise<boolean> {
    if (this.#count === undefined) await this.#sweep();
    else if (this.#now() - this.#sweptAt >= this.#sweepEveryMs) void this.#sweep();
    if ((this.#count ?? 0) < this.#maxSessions) return true;
    if (this.#sweeping !== undefined) await this.#sweeping;
    else if (this.#now() - this.#sweptAt >= FULL_SWEEP_MS) await this.#sweep();
    return (this.#count ?? 0) < this.#maxSessions;
  }

  /**
   * The lane of a question in a session: `text` for natural language, one per protocol whose document says
   * `multiround: true`, or `undefined` for a single-round protocol, whose query stands alone (nothing to keep, so
   * nothing a stranger's flood of one-shot messages could fill the table with). A document not known here is the
   * receiver's to judge, as a turn. Each document is read once; the answer is synchronous once known.
   */
  laneOf(
    receiver: Pick<ReceiverApi, 'document'>,
    protocolHash: string | undefined,
  ): string | undefined | Promise<string | undefined> {
    if (protocolHash === undefined) return 'text';
    const hex = normalizeHash(protocolHash);
    if (hex === undefined) return `protocol:${protocolHash}`;
    const lane = `protocol:${hex}`;
    const known = this.#multiround.get(hex);
    if (known !== undefined) return known ? lane : undefined;
    return receiver.document(hex).then(
      (text) => {
        if (text === undefined) return lane;
        let multiround = true;
        try {
          multiround = parseDocument(text).metadata.multiround;
        } catch {
          // A document that does not parse is the receiver's to refuse.
        }
        if (this.#multiround.size >= MAX_KNOWN_PROTOCOLS)
          this.#multiround.delete(this.#multiround.keys().next().value as string);
        this.#multiround.set(hex, multiround);
        return multiround ? lane : undefined;
      },
      () => lane,
    );
  }

  /** Opens a session under `key` (a server-issued id: MCP's `initialize`); it lives `idleMs` unless used. */
  async open(key: string): Promise<void> {
    await this.#memory.set(this.#keyOf(key), { expiresAt: this.#now() + this.#idleMs, conversations: {} });
    if (this.#count !== undefined) this.#count += 1;
  }

  /** Whether a session is live. */
  async has(key: string): Promise<boolean> {
    return (await this.#read(this.#keyOf(key))) !== undefined;
  }

  /** Ends a session: forgets it and ends the conversations it opened. */
  async close(key: string, receiver: Pick<ReceiverApi, 'end'>): Promise<boolean> {
    const memoryKey = this.#keyOf(key);
    const record = await this.#read(memoryKey);
    if (record === undefined) return false;
    await this.#memory.delete(memoryKey);
    if (this.#count !== undefined && this.#count > 0) this.#count -= 1;
    await Promise.all(Object.values(record.conversations).map(({ id }) => receiver.end(id).catch(() => undefined)));
    return true;
  }

  /**
   * A turn of a session in one lane (its protocol, or an MCP tool): the next turn of the conversation the session
   * opened there, else (none yet, or expired) a new multiround query whose conversation the session keeps. A session
   * not seen before is opened, unless the table is full (`TOO_MANY_CONVERSATIONS`: no live session is ever dropped).
   */
  turn(
    receiver: ReceiverApi,
    key: string,
    lane: string,
    query: QueryRequest,
    context?: RequestContext,
  ): Promise<SuccessResponse> {
    return this.#turns.run(key, async () => {
      const memoryKey = this.#keyOf(key);
      const found = await this.#read(memoryKey);
      const record = found ?? { expiresAt: 0, conversations: {} };
      const open = record.conversations[lane];
      if (open !== undefined && open.expiresAt > this.#now()) {
        try {
          const reply = await receiver.followUp(open.id, { body: query.body }, context);
          return await this.#keep(memoryKey, record, lane, reply, open.id);
        } catch (error) {
          if (
            !isAgoraError(error) ||
            (error.code !== 'CONVERSATION_EXPIRED' && error.code !== 'CONVERSATION_NOT_FOUND')
          )
            throw error;
        }
      }
      if (found === undefined && !(await this.hasRoom()))
        throw new AgoraError('TOO_MANY_CONVERSATIONS', 'Too many open sessions: try again when one has ended');
      this.#makeRoomForLane(record, lane);
      const reply = await receiver.query({ ...query, multiround: true }, context);
      if (found === undefined && this.#count !== undefined) this.#count += 1;
      return this.#keep(memoryKey, record, lane, reply, reply.conversationId);
    });
  }

  /** Forgets a session's expired conversations before a new lane opens; refuses a lane past the cap. */
  #makeRoomForLane(record: SessionRecord, lane: string): void {
    const lanes = Object.keys(record.conversations);
    if (lanes.length < this.#maxConversations || lanes.includes(lane)) return;
    const now = this.#now();
    for (const [name, open] of Object.entries(record.conversations))
      if (open.expiresAt <= now) delete record.conversations[name];
    if (Object.keys(record.conversations).length >= this.#maxConversations) {
      throw new AgoraError(
        'TOO_MANY_CONVERSATIONS',
        `Too many conversations in one session (at most ${this.#maxConversations}): end one, or use another session`,
      );
    }
  }

  async #keep(
    memoryKey: string,
    record: SessionRecord,
    lane: string,
    reply: SuccessResponse,
    conversation: string | undefined,
  ): Promise<SuccessResponse> {
    const now = this.#now();
    if (conversation === undefined || reply.conversationExpires === undefined) delete record.conversations[lane];
    else record.conversations[lane] = { id: conversation, expiresAt: reply.conversationExpires * 1000 };
    // The session lives while its latest conversation does, and at least `idleMs` after its last use.
    const latest = Math.max(0, ...Object.values(record.conversations).map((entry) => entry.expiresAt));
    record.expiresAt = Math.max(now + this.#idleMs, latest);
    await this.#memory.set(memoryKey, record as unknown as JsonValue);
    return reply;
  }

  /** Where a session is kept: in a shared memory, a digest of its key (any text; a memory's keys are not). */
  #keyOf(key: string): string {
    return `${this.#prefix}${this.#shared ? createHash('sha256').update(key).digest('base64url') : key}`;
  }

  async #read(memoryKey: string): Promise<SessionRecord | undefined> {
    const record = await this.#memory.get<JsonValue>(memoryKey);
    if (!isRecord(record)) return undefined;
    if (record.expiresAt > this.#now()) return record;
    await this.#memory.delete(memoryKey).catch(() => undefined);
    return undefined;
  }

  /** Deletes the expired sessions of the memory and counts the live ones (one sweep at a time). */
  #sweep(): Promise<void> {
    this.#sweeping ??= (async () => {
      this.#sweptAt = this.#now();
      const keys = await this.#memory.keys(this.#prefix);
      let live = 0;
      // A few reads at a time: a sweep of 10 000 sessions never holds many files or Redis replies at once.
      for (let index = 0; index < keys.length; index += SWEEP_BATCH) {
        const batch = keys.slice(index, index + SWEEP_BATCH);
        const records = await Promise.all(batch.map((key) => this.#memory.get<JsonValue>(key).catch(() => undefined)));
        const expired = batch.filter((_key, at) => {
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
}

function isRecord(value: unknown): value is SessionRecord {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Partial<SessionRecord>;
  return (
    typeof record.expiresAt === 'number' && typeof record.conversations === 'object' && record.conversations !== null
  );
}
