// AgoraError codes as HTTP statuses on a plain HTTP wire, and a thrown value as a response (the Agora wire's own
// statuses are in ../agora/status.ts; errors.ts and the receiver know no HTTP).
import { describeError, isAgoraError, type AgoraError, type AgoraErrorCode } from '../errors.js';
import type { Logger } from '../log.js';
import { requestId, type EdgeRequest } from './request.js';
import type { EdgeResponse } from './response.js';

/**
 * The HTTP status each code answers with on a wire of plain HTTP statuses (the hub, rooms, dashboards, faces): a
 * refusal is a 400, a peer or source that failed a 502. The Agora wire answers its own failures 200 instead
 * (../agora/status.ts).
 */
const HTTP_STATUS: Record<AgoraErrorCode, number> = {
  UNSUPPORTED_PROTOCOL: 400,
  PROTOCOL_CHANGED: 400,
  CONVERSATION_EXPIRED: 400,
  CONVERSATION_NOT_FOUND: 404,
  NATURAL_LANGUAGE_UNSUPPORTED: 400,
  ROUTINE_FAILED: 400,
  LLM_UNAVAILABLE: 400,
  BAD_REQUEST: 400,
  REQUEST_TOO_LARGE: 413,
  NOT_FOUND: 404,
  CONFLICT: 409,
  METHOD_NOT_ALLOWED: 405,
  UNAUTHORIZED: 401,
  RATE_LIMITED: 429,
  TOO_MANY_CONVERSATIONS: 400,
  REQUEST_TIMEOUT: 408,
  INVALID_DOCUMENT: 400,
  SOURCE_FAILED: 502,
  PEER_FAILURE: 502,
  NEGOTIATION_FAILED: 400,
  INVALID_OUTPUT: 400,
  TIMEOUT: 504,
  // The agent's own code handed the framework a value it cannot take (a memory key, a tool name, a tool's input).
  INVALID_ARGUMENT: 500,
  // The conversation store (Redis) did not answer in time: the client may retry (with Retry-After).
  STORE_UNAVAILABLE: 503,
  INTERNAL: 500,
};

/** The status a code answers with on a wire of plain HTTP statuses (see {@link HTTP_STATUS}). */
export function httpStatus(code: AgoraErrorCode): number {
  return HTTP_STATUS[code] ?? 500;
}

/** The status an error answers with on a wire of plain HTTP statuses. */
export function statusOf(error: AgoraError): number {
  return httpStatus(error.code);
}

/** How one wire answers a thrown value: its status for an AgoraError, its failure shape, where internal errors go. */
export type FailureWire = {
  status: (error: AgoraError) => number;
  shape: (status: number, message: string) => EdgeResponse;
  logger?: Pick<Logger, 'error'> | undefined;
};

/**
 * A thrown value as a response on a wire: an AgoraError with its status and message; the store down as 503 with
 * Retry-After (its connection reports the outage once, not per request); anything else a 500 whose details stay in
 * the log, found by the request id the client is given.
 */
export function failureResponse(
  request: Pick<EdgeRequest, 'method' | 'path' | 'signal' | 'id'>,
  error: unknown,
  wire: FailureWire,
): EdgeResponse {
  if (isAgoraError(error)) {
    if (error.code === 'STORE_UNAVAILABLE') {
      const response = wire.shape(503, 'Store unavailable');
      response.headers['retry-after'] = STORE_RETRY_AFTER;
      return response;
    }
    const status = wire.status(error);
    if (status !== 500) {
      if (status > 503) wire.logger?.error(`${request.method} ${request.path}: ${describeError(error)}`);
      return wire.shape(status, error.message);
    }
  }
  // A client that went away aborts its work: not an internal error worth a log line.
  if (request.signal?.aborted) return wire.shape(500, 'Internal error');
  const id = request.id ?? requestId();
  const details = error instanceof Error && error.stack && !isAgoraError(error) ? error.stack : describeError(error);
  wire.logger?.error(`request ${id}: ${request.method} ${request.path} failed: ${details}`);
  const response = wire.shape(500, `Internal error (request ${id})`);
  response.headers['x-request-id'] = id;
  return response;
}

/** Seconds a client is asked to wait when the store is unavailable: about one reconnection attempt. */
export const STORE_RETRY_AFTER = '2';
