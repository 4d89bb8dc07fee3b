// AgoraError codes as HTTP statuses: the one place a code becomes a status (errors.ts knows no HTTP).
import type { AgoraError, AgoraErrorCode } from '../errors.js';

/** The HTTP status each code answers with at the receiver's edge (spec §2: Agora-level failures are 200). */
const AGORA_STATUS: Record<AgoraErrorCode, number> = {
  UNSUPPORTED_PROTOCOL: 200,
  PROTOCOL_CHANGED: 400,
  CONVERSATION_EXPIRED: 200,
  CONVERSATION_NOT_FOUND: 404,
  NATURAL_LANGUAGE_UNSUPPORTED: 200,
  ROUTINE_FAILED: 200,
  LLM_UNAVAILABLE: 200,
  BAD_REQUEST: 400,
  REQUEST_TOO_LARGE: 413,
  NOT_FOUND: 404,
  CONFLICT: 409,
  METHOD_NOT_ALLOWED: 405,
  UNAUTHORIZED: 401,
  RATE_LIMITED: 429,
  TOO_MANY_CONVERSATIONS: 200,
  REQUEST_TIMEOUT: 408,
  INVALID_DOCUMENT: 400,
  SOURCE_FAILED: 200,
  PEER_FAILURE: 502,
  NEGOTIATION_FAILED: 200,
  INVALID_OUTPUT: 200,
  TIMEOUT: 504,
  // The agent's own code handed the framework a value it cannot take (a memory key, a tool name, a tool's input).
  INVALID_ARGUMENT: 500,
  // The conversation store (Redis) did not answer in time: the client may retry (with Retry-After).
  STORE_UNAVAILABLE: 503,
  INTERNAL: 500,
};

/** The status a code answers with on the Agora wire, where Agora-level failures are 200 (spec §2). */
export function agoraStatus(code: AgoraErrorCode): number {
  return AGORA_STATUS[code];
}

/**
 * The status an error answers with on any other wire (the hub, rooms, dashboards): a refusal that the Agora wire
 * answers 200 is a 400 there, and a peer or source that failed is a 502.
 */
export function statusOf(error: AgoraError): number {
  if (error.code === 'SOURCE_FAILED' || error.code === 'PEER_FAILURE') return 502;
  const status = AGORA_STATUS[error.code] ?? 500;
  return status === 200 ? 400 : status;
}
