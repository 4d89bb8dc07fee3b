// A peer's reply read into what the sender returns, or into a failure that names the request and keeps the peer's
// text (`POST http://host/: HTTP 404: Conversation not found`, `…: failure: Unsupported protocol`).
import type { TurnUsage } from '../_usage.js';
import { AgoraError, isAgoraError } from '../errors.js';
import { peerResponseSchema, type JsonValue } from '../schemas.js';

/** A peer's success reply. */
export type QueryResult = {
  body: JsonValue;
  conversationId?: string;
  conversationExpires?: number;
  /** The LLM usage the peer reported for its turn (its `Agora-Usage` header), when it reported one. */
  usage?: TurnUsage;
};

/**
 * A peer failure: the method, the URL, then what went wrong. An Agora failure answered with a 2xx reads
 * `failure: <text>` (its status says nothing); an HTTP refusal keeps its status (`HTTP 404: <text>`).
 */
export function peerFailure(method: string, url: string, status: number, text: string): AgoraError {
  const kind = status >= 200 && status < 300 ? 'failure' : `HTTP ${status}`;
  return new AgoraError('PEER_FAILURE', `${method} ${url}: ${kind}: ${text}`, { status });
}

/** Whether a peer's failure says the conversation is over already (404, or "Conversation not found/expired"). */
export function isGone(error: unknown): boolean {
  return (
    isAgoraError(error) &&
    error.code === 'PEER_FAILURE' &&
    (error.status === 404 || /: (HTTP \d+|failure): Conversation (not found|expired)/i.test(error.message))
  );
}

/** An error reply in either failure shape keeps the peer's text; anything else says it is not an Agora reply. */
export function peerError(method: string, url: string, status: number, json: unknown): AgoraError {
  const failure = peerResponseSchema.safeParse(json);
  if (failure.success && failure.data.status === 'failure') return peerFailure(method, url, status, failure.data.error);
  if (failure.success && failure.data.status === 'error') return peerFailure(method, url, status, failure.data.message);
  return new AgoraError('PEER_FAILURE', `${method} ${url}: HTTP ${status}, not an Agora reply`, { status });
}

/** A peer's whole reply as a result (body, conversation id and expiry), or its failure. */
export function queryResult(method: string, url: string, status: number, json: unknown): QueryResult {
  const parsed = peerResponseSchema.safeParse(json);
  if (!parsed.success || parsed.data.status !== 'success') throw peerError(method, url, status, json);
  const reply = parsed.data;
  const result: QueryResult = { body: (reply.body ?? null) as JsonValue };
  if (reply.conversationId) result.conversationId = reply.conversationId;
  if (reply.conversationExpires !== undefined && Number.isFinite(reply.conversationExpires))
    result.conversationExpires = reply.conversationExpires;
  return result;
}
