// The one wording of an outbound request's failure: the request (its method and URL), then what went wrong
// (`GET http://host/wellknown: HTTP 404`, `POST http://host/: no answer within 30 s`, `…: connection refused`).
import { AgoraError, isAgoraError, networkFailure } from '../errors.js';
import { ForbiddenAddressError } from './guard.js';

/** A request as a failure names it: its method and URL (`GET http://host/wellknown`). */
export function requestName(method: string, url: string): string {
  return `${method} ${url}`;
}

/** A bound on waiting, as a failure words it: whole seconds as `30 s`, else `250 ms`. */
export function duration(ms: number): string {
  return ms >= 1000 && ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/** What a request that timed out says: `no answer within 30 s`. */
export function noAnswerWithin(ms: number): string {
  return `no answer within ${duration(ms)}`;
}

/** What a reply past its cap says: `reply larger than 1024 bytes`. */
export function tooLarge(maxBytes: number): string {
  return `reply larger than ${maxBytes} bytes`;
}

/** Words a failure of one request from its reason (`reason` → `GET http://host/x: reason`). */
export type Wording = (reason: string) => string;

/** The guard's refusal behind a failed connection, if that is what it was. */
export function guardRefusal(error: unknown): ForbiddenAddressError | undefined {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 4; depth++) {
    if (current instanceof ForbiddenAddressError) return current;
    current = current.cause;
  }
  return undefined;
}

/**
 * Why a request failed without a reply, in words: the guard's refusal as it says it, else the network's word
 * (`connection refused`, `host not found`).
 */
export function connectFailure(error: unknown): string {
  return guardRefusal(error)?.message ?? networkFailure(error);
}

/** A failure without a reply as a PEER_FAILURE (`GET http://host/x: connection refused`); an AgoraError is kept. */
export function networkError(words: Wording, error: unknown): AgoraError {
  if (isAgoraError(error)) return error;
  return new AgoraError('PEER_FAILURE', words(connectFailure(error)), { cause: error });
}
