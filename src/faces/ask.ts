// How every face puts a question to the receiver: one Agora query, or a turn of the conversation a face's
// session (ROAR `context.session_id`, A2A `contextId`) stands for.
import { createHash, randomUUID } from 'node:crypto';
import { AgoraError, isAgoraError } from '../errors.js';
import type { ReceiverApi, RequestContext } from '../receiver.js';
import type { JsonValue, QueryRequest, SuccessResponse } from '../schemas.js';

/** A question as the faces put it. */
export type Ask = {
  /** A protocol query when set (hex or base64 hash); natural language otherwise. */
  protocolHash?: string;
  protocolSources?: string[];
  body: JsonValue;
  /** A session key (already scoped to its caller): its first ask opens a multiround conversation, the next ones are turns. */
  session?: string;
};

/** A session key and the id a face hands back for it (see `SessionMap.scope`). */
export type ScopedSession = { key: string; id: string };

/**
 * Sessions → Agora conversation ids. A session lives as long as its conversation: a full map refuses a new
 * session (`TOO_MANY_CONVERSATIONS`, which each face answers as its own error) and never drops a live one.
 */
export class SessionMap {
  readonly #ids = new Map<string, { id: string; expiresAt: number }>();
  readonly #max: number;
  readonly #now: () => number;
  #sweptAt = -Infinity;

  constructor(options: { maxSessions?: number; now?: () => number } = {}) {
    this.#max = options.maxSessions ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Scopes a client's session id: under its principal (a token's digest, a verified signer) when it has one, the
   * id kept as given; without one, the id is kept only when it is one this map issued and its conversation still
   * lives, and any other id gets a fresh server-issued one: a new conversation.
   */
  scope(face: string, given: string, principal: string | undefined): ScopedSession {
    if (principal !== undefined) return { key: `${face}\n${principal}\n${given}`, id: given };
    if (this.get(`${face}\n\n${given}`) !== undefined) return { key: `${face}\n\n${given}`, id: given };
    const id = randomUUID();
    return { key: `${face}\n\n${id}`, id };
  }

  /** The live conversation of a session. */
  get(session: string): string | undefined {
    const entry = this.#ids.get(session);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > this.#now()) return entry.id;
    this.#ids.delete(session);
    return undefined;
  }

  /** Refuses a new session when the map is full of live ones (expired ones are forgotten first, at most once a second). */
  admit(session: string): void {
    if (this.#ids.size < this.#max || this.#ids.has(session)) return;
    const now = this.#now();
    if (now - this.#sweptAt >= 1000) {
      this.#sweptAt = now;
      for (const [key, entry] of this.#ids) if (entry.expiresAt <= now) this.#ids.delete(key);
    }
    if (this.#ids.size >= this.#max) throw new AgoraError('TOO_MANY_CONVERSATIONS', 'Too many open sessions: try again when one has ended');
  }

  /** Remembers a session's conversation until it expires (Unix seconds, as `conversationExpires`); never evicts another. */
  set(session: string, id: string, expiresSeconds: number | undefined): void {
    this.#ids.delete(session);
    this.#ids.set(session, { id, expiresAt: expiresSeconds === undefined ? this.#now() + 300_000 : expiresSeconds * 1000 });
  }

  /** Forgets a session. */
  delete(session: string): void {
    this.#ids.delete(session);
  }

  /** How many sessions are held (live or not yet swept). */
  get size(): number {
    return this.#ids.size;
  }
}

/** A session scope of a bearer token (`Bearer …` or the bare token): its digest, `undefined` without one. */
export function tokenScope(token: string | undefined): string | undefined {
  const bare = token?.replace(/^Bearer\s+/i, '').trim();
  return bare ? `token:${createHash('sha256').update(bare).digest('base64url')}` : undefined;
}

/**
 * Answers an ask with the receiver: a single query, or the next turn of the session's conversation (a new one
 * when it has expired). Throws the receiver's AgoraError.
 */
export function ask(receiver: ReceiverApi, sessions: SessionMap, question: Ask, context?: RequestContext): Promise<SuccessResponse> {
  // Without a session, the receiver's own promise: no async layer of ours on the faces' hot path.
  if (question.session === undefined) return receiver.query(queryOf(question), context);
  return askInSession(receiver, sessions, question, question.session, context);
}

async function askInSession(receiver: ReceiverApi, sessions: SessionMap, question: Ask, session: string, context?: RequestContext): Promise<SuccessResponse> {
  const id = sessions.get(session);
  if (id !== undefined) {
    try {
      const reply = await receiver.followUp(id, { body: question.body }, context);
      sessions.set(session, id, reply.conversationExpires);
      return reply;
    } catch (error) {
      if (!isAgoraError(error) || (error.code !== 'CONVERSATION_EXPIRED' && error.code !== 'CONVERSATION_NOT_FOUND')) throw error;
      sessions.delete(session);
    }
  }
  sessions.admit(session);
  const query = queryOf(question);
  query.multiround = true;
  const reply = await receiver.query(query, context);
  if (reply.conversationId) sessions.set(session, reply.conversationId, reply.conversationExpires);
  return reply;
}

/** The Agora query an ask stands for (a session's first ask adds `multiround`). */
function queryOf(question: Ask): QueryRequest {
  const query: QueryRequest = { body: question.body };
  if (question.protocolHash !== undefined) query.protocolHash = question.protocolHash;
  if (question.protocolSources !== undefined) query.protocolSources = question.protocolSources;
  return query;
}
