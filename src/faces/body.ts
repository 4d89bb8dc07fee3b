// A face's request body as text: read through the edge (capped there when it streams in), capped again when an
// adapter or a test hands it over whole, a leading BOM dropped.
import { AgoraError, isAgoraError } from '../errors.js';
import { bodyOf, type EdgeRequest } from '../edge/request.js';

/** The body as UTF-8 text; past `maxBytes`, `AgoraError('REQUEST_TOO_LARGE')` (each face answers it in its shape). */
export async function readBodyText(request: EdgeRequest, maxBytes: number): Promise<string> {
  const body = await bodyOf(request);
  if (body.length > maxBytes) throw new AgoraError('REQUEST_TOO_LARGE');
  const text = body.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** Whether an error is the edge's or a face's refusal of a body over the cap. */
export function isTooLarge(error: unknown): boolean {
  return isAgoraError(error) && error.code === 'REQUEST_TOO_LARGE';
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
