// A face's request body as text: read through the edge (capped there when it streams in, its nesting capped),
// capped again when an adapter or a test hands it over whole, a leading BOM dropped.
import { isAgoraError, type AgoraError } from '../errors.js';
import { jsonBodyOf } from '../edge/body.js';
import type { EdgeRequest } from '../edge/request.js';

/**
 * The body as UTF-8 text; past `maxBytes`, `AgoraError('REQUEST_TOO_LARGE')`; nested too deeply (or aborted),
 * `AgoraError('BAD_REQUEST')`. Each face answers both in its own shape.
 */
export async function readBodyText(request: EdgeRequest, maxBytes: number): Promise<string> {
  const body = await jsonBodyOf(request, maxBytes);
  const text = body.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Whether an error is the edge's or a face's refusal of a body over the cap. */
export function isTooLarge(error: unknown): boolean {
  return isAgoraError(error) && error.code === 'REQUEST_TOO_LARGE';
}

/** Whether an error is the edge's refusal of a body it would not hand over (nested too deeply, aborted, badly encoded). */
export function isBadBody(error: unknown): error is AgoraError {
  return isAgoraError(error) && error.code === 'BAD_REQUEST';
}

/** A short error code for an HTTP status, as the faces' error bodies name them (`unauthorized`, `rate_limited`…). */
export function errorCodeOf(status: number): string {
  return ERROR_CODES[status] ?? (status >= 500 ? 'internal_error' : 'bad_request');
}

const ERROR_CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  408: 'request_timeout',
  413: 'request_too_large',
  415: 'unsupported_media_type',
  417: 'expectation_failed',
  426: 'upgrade_required',
  429: 'rate_limited',
  500: 'internal_error',
  502: 'bad_gateway',
  503: 'service_unavailable',
  504: 'timeout',
};
