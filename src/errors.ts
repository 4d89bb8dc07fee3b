/** Every failure the framework reports, by code. */
export type AgoraErrorCode =
  | 'UNSUPPORTED_PROTOCOL'
  | 'PROTOCOL_CHANGED'
  | 'CONVERSATION_EXPIRED'
  | 'CONVERSATION_NOT_FOUND'
  | 'NATURAL_LANGUAGE_UNSUPPORTED'
  | 'ROUTINE_FAILED'
  | 'LLM_UNAVAILABLE'
  | 'BAD_REQUEST'
  | 'REQUEST_TOO_LARGE'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'METHOD_NOT_ALLOWED'
  | 'UNAUTHORIZED'
  | 'RATE_LIMITED'
  | 'TOO_MANY_CONVERSATIONS'
  | 'REQUEST_TIMEOUT'
  | 'INVALID_DOCUMENT'
  | 'SOURCE_FAILED'
  | 'PEER_FAILURE'
  | 'NEGOTIATION_FAILED'
  | 'INVALID_OUTPUT'
  | 'TIMEOUT'
  | 'INVALID_ARGUMENT'
  | 'STORE_UNAVAILABLE'
  | 'INTERNAL';

/** The fixed texts of spec §2 (peers and tests match on them). */
export const FIXED_MESSAGES = {
  UNSUPPORTED_PROTOCOL: 'Unsupported protocol',
  PROTOCOL_CHANGED: 'Protocol cannot change within a conversation',
  CONVERSATION_EXPIRED: 'Conversation expired',
  CONVERSATION_NOT_FOUND: 'Conversation not found',
  NATURAL_LANGUAGE_UNSUPPORTED: 'This agent only accepts queries under the protocols listed at /wellknown',
  ROUTINE_FAILED: 'Routine failed',
  LLM_UNAVAILABLE: 'LLM unavailable',
  REQUEST_TOO_LARGE: 'Request too large',
  NOT_FOUND: 'Not found',
  METHOD_NOT_ALLOWED: 'Method not allowed',
  UNAUTHORIZED: 'Unauthorized',
  RATE_LIMITED: 'Too many requests',
  TOO_MANY_CONVERSATIONS: 'Too many live conversations',
  REQUEST_TIMEOUT: 'Request timeout',
  STORE_UNAVAILABLE: 'Store unavailable',
  INTERNAL: 'Internal error',
} as const satisfies Partial<Record<AgoraErrorCode, string>>;

/**
 * The one error class of the framework: a code, a message fit for its audience, an optional cause.
 * @example throw new AgoraError('UNSUPPORTED_PROTOCOL', 'Unsupported protocol');
 */
export class AgoraError extends Error {
  readonly code: AgoraErrorCode;
  /** HTTP status of a peer's answer, when this error came from one. */
  readonly status?: number;

  constructor(code: AgoraErrorCode, message?: string, options?: { cause?: unknown; status?: number }) {
    super(message ?? (FIXED_MESSAGES as Partial<Record<AgoraErrorCode, string>>)[code] ?? code, {
      cause: options?.cause,
    });
    this.name = 'AgoraError';
    this.code = code;
    if (options?.status !== undefined) this.status = options.status;
  }
}

/** Whether a value is an AgoraError (also across duplicated module instances). */
export function isAgoraError(value: unknown): value is AgoraError {
  return value instanceof AgoraError || (value instanceof Error && value.name === 'AgoraError' && 'code' in value);
}

/** A one-line description of any thrown value, for logs. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

// Node's network error codes in the words every command prints (`POST http://…: connection refused`).
const NETWORK_WORDS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found (DNS lookup failed)',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'connection closed while sending',
  UND_ERR_SOCKET: 'connection closed by the peer',
  UND_ERR_HEADERS_TIMEOUT: 'no reply headers in time',
  UND_ERR_BODY_TIMEOUT: 'reply body stalled',
};

/**
 * Why a network call failed, in one wording whatever made it (fetch's `TypeError: fetch failed` and its cause, a
 * socket error): `connection refused`, `host not found`…, else the innermost message, never a class name.
 * @example networkFailure(error) // 'connection refused'
 */
export function networkFailure(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_WORDS[code]) return NETWORK_WORDS[code];
    const cause = (current as { cause?: unknown }).cause;
    if (cause === undefined || cause === null) break;
    current = cause;
  }
  if (current instanceof Error) return current.message === 'fetch failed' ? 'connection failed' : current.message;
  return String(current);
}
