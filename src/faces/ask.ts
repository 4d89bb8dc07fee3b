// How every face puts a question to the receiver: one Agora query, or a turn of the conversation a face's
// session (ROAR `context.session_id`, A2A `contextId`) stands for.
import { isAgoraError } from '../errors.js';
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

/** Sessions → Agora conversation ids, bounded and forgotten when the conversation expires. */
export class SessionMap {
  readonly #ids = new Map<string, { id: string; expiresAt: number }>();
  readonly #max: number;
  readonly #now: () => number;

  constructor(options: { maxSessions?: number; now?: () => number } = {}) {
    this.#max = options.maxSessions ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /** The live conversation of a session. */
  get(session: string): string | undefined {
    const entry = this.#ids.get(session);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > this.#now()) return entry.id;
    this.#ids.delete(session);
    return undefined;
  }

  /** Remembers a session's conversation until it expires (Unix seconds, as `conversationExpires`). */
  set(session: string, id: string, expiresSeconds: number | undefined): void {
    this.#ids.delete(session);
    if (this.#ids.size >= this.#max) {
      const oldest = this.#ids.keys().next().value;
      if (oldest !== undefined) this.#ids.delete(oldest);
    }
    this.#ids.set(session, { id, expiresAt: expiresSeconds === undefined ? this.#now() + 300_000 : expiresSeconds * 1000 });
  }

  /** Forgets a session. */
  delete(session: string): void {
    this.#ids.delete(session);
  }
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
