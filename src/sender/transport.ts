// The sender's wire, on the one outbound client (src/net/): one exchange with a peer at a time, bounded in time and
// size, its failures read into AgoraErrors that name the method and URL (`POST http://host/: HTTP 404: …`).
import { parseUsage, USAGE_HEADER } from '../_usage.js';
import { AgoraError } from '../errors.js';
import { bearer, CLIENT_DEFAULTS, HttpClient, parseJsonBytes, type HttpClientOptions } from '../net/client.js';
import { peerError, queryResult, type QueryResult } from './replies.js';

export { bearer, JsonText } from '../net/client.js';
export { boundedFetch } from '../net/bounded-fetch.js';
export { readCapped } from '../net/read.js';
export { isGone, peerFailure, type QueryResult } from './replies.js';

/** The default bound on one HTTP exchange with a peer: 30 s. */
export const DEFAULT_SENDER_TIMEOUT_MS = CLIENT_DEFAULTS.timeoutMs;

/** The default cap on a peer's reply: 16 MiB (a reply larger than this is not an Agora reply). */
export const MAX_REPLY_BYTES = CLIENT_DEFAULTS.maxReplyBytes;

/** An HTTP method the sender uses. */
export type PeerMethod = 'GET' | 'POST' | 'DELETE';

/** What one exchange brought back: the status, the headers, and the body's bytes (read up to a cap). */
export type PeerResponse = { status: number; headers: Headers; bytes: Uint8Array };

/** Options of {@link PeerTransport}: the one client's (timeout, cap, token, headers, connector, guard). */
export type TransportOptions = Pick<
  HttpClientOptions,
  'fetch' | 'timeoutMs' | 'token' | 'tokenOrigin' | 'tokenSource' | 'headers' | 'maxReplyBytes' | 'guard'
>;

/** The headers every request to a peer carries: the caller's own, then the bearer token. */
export function peerHeaders(options: Pick<TransportOptions, 'token' | 'headers'>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.headers ?? {})) headers[name.toLowerCase()] = value;
  if (options.token) headers.authorization = bearer(options.token);
  return headers;
}

/** {@link peerHeaders} for a request to `url`, the token asked of `tokenSource` when one is given. */
export async function peerHeadersFor(
  options: Pick<TransportOptions, 'token' | 'tokenSource' | 'headers'>,
  url: string,
): Promise<Record<string, string>> {
  const headers = peerHeaders(options);
  if (options.tokenSource) headers.authorization = bearer(await options.tokenSource.token(url));
  return headers;
}

/** An agent's base URL without a trailing slash, query or fragment (`http://host/agora`). */
export function agentBaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new AgoraError('BAD_REQUEST', `Not a URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new AgoraError('BAD_REQUEST', `Not an http(s) URL: ${url}`);
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}`;
}

/**
 * HTTP with peers: each exchange bounded by the timeout (body included) and a size cap, never retried; a JSON
 * reply read through the wire schema.
 */
export class PeerTransport {
  /** The one client under this transport (streams open their exchanges on it). */
  readonly client: HttpClient;

  constructor(options: TransportOptions = {}) {
    this.client = new HttpClient(options);
  }

  /** Posts a query or a turn and returns the peer's success reply; any failure is AgoraError('PEER_FAILURE'). */
  async post(url: string, payload: Record<string, unknown>, signal?: AbortSignal): Promise<QueryResult> {
    const response = await this.exchange('POST', url, payload, signal);
    const result = queryResult('POST', url, response.status, this.parseJson('POST', url, response));
    const usage = parseUsage(response.headers.get(USAGE_HEADER));
    if (usage) result.usage = usage;
    return result;
  }

  /** A GET's body when the peer answers 2xx, else undefined (a document a peer does not serve). */
  async download(url: string, maxBytes: number, signal?: AbortSignal): Promise<Uint8Array | undefined> {
    const response = await this.exchange('GET', url, undefined, signal, maxBytes);
    return response.status >= 200 && response.status < 300 ? response.bytes : undefined;
  }

  /** A reply's JSON (a leading BOM allowed); a reply that is not JSON is a PEER_FAILURE naming the URL. */
  parseJson(method: PeerMethod, url: string, response: PeerResponse): unknown {
    return parseJsonBytes(response.bytes, response.status, this.client.wording(method, url));
  }

  /** An error reply in either failure shape keeps the peer's text; anything else says it is not an Agora reply. */
  peerError(method: PeerMethod, url: string, status: number, json: unknown): AgoraError {
    return peerError(method, url, status, json);
  }

  /** One HTTP exchange, bounded by the timeout (body included) and a size cap; never retried. */
  async exchange(
    method: PeerMethod,
    url: string,
    payload?: unknown,
    signal?: AbortSignal,
    maxBytes = this.client.maxReplyBytes,
  ): Promise<PeerResponse> {
    const reply = await this.client.request(method, url, { json: payload, signal, maxBytes, retries: 0 });
    return { status: reply.status, headers: reply.headers, bytes: reply.bytes };
  }
}

/** Options of {@link getJson}. */
export type GetJsonOptions = { maxBytes?: number; signal?: AbortSignal; retries?: number };

/**
 * A GET's JSON, tried again (twice by default) when the connection fails or a gateway answers 502/503/504; a
 * non-2xx reply is a PEER_FAILURE naming the URL and status (the peer's text is not copied).
 */
export async function getJson(transport: PeerTransport, url: string, options: GetJsonOptions = {}): Promise<unknown> {
  return transport.client.getJson(url, { ...options, retries: options.retries ?? 2 });
}
