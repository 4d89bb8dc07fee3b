// The sender's wire: one HTTP exchange with a peer at a time, bounded in time and size, its failures read into
// AgoraErrors that name the method and URL (`POST http://host/: HTTP 404: Conversation not found`).
import { AgoraError, isAgoraError, networkFailure } from '../errors.js';
import { peerResponseSchema, type JsonValue } from '../schemas.js';

/** The default bound on one HTTP exchange with a peer: 30 s. */
export const DEFAULT_SENDER_TIMEOUT_MS = 30_000;

// A reply larger than this is not an Agora reply.
export const MAX_REPLY_BYTES = 16 * 1024 * 1024;

/** A peer's success reply. */
export type QueryResult = { body: JsonValue; conversationId?: string; conversationExpires?: number };

/** An HTTP method the sender uses. */
export type PeerMethod = 'GET' | 'POST' | 'DELETE';

/** What one exchange brought back: the status and the body's bytes (read up to a cap). */
export type PeerResponse = { status: number; bytes: Uint8Array };

/** Options of {@link PeerTransport}. */
export type TransportOptions = {
  fetch?: typeof fetch;
  /** Bound on each HTTP exchange with a peer, in ms (default 30 000). */
  timeoutMs?: number;
  /** Bearer token sent with every request (`Authorization: Bearer <token>`), for a peer started with `--token`. */
  token?: string;
  /** Headers sent with every request (a proxy's key, a tracing id); `token` wins over an `authorization` here. */
  headers?: Record<string, string>;
  /** Largest reply read, in bytes, after decompression (default 16 MiB). */
  maxReplyBytes?: number;
};

/** The headers every request to a peer carries: the caller's own, then the bearer token. */
export function peerHeaders(options: Pick<TransportOptions, 'token' | 'headers'>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(options.headers ?? {})) headers[name.toLowerCase()] = value;
  if (options.token) headers.authorization = `Bearer ${options.token}`;
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

/** Whether a peer's failure says the conversation is over already (404, or "Conversation not found/expired"). */
export function isGone(error: unknown): boolean {
  return (
    isAgoraError(error) &&
    error.code === 'PEER_FAILURE' &&
    (error.status === 404 || /: (HTTP \d+|failure): Conversation (not found|expired)/i.test(error.message))
  );
}

/**
 * A peer failure in ky's style: the method, the URL, then what went wrong. An Agora failure answered with a 2xx
 * reads `failure: <text>` (its status says nothing); an HTTP refusal keeps its status (`HTTP 404: <text>`).
 */
export function peerFailure(method: string, url: string, status: number, text: string): AgoraError {
  const kind = status >= 200 && status < 300 ? 'failure' : `HTTP ${status}`;
  return new AgoraError('PEER_FAILURE', `${method} ${url}: ${kind}: ${text}`, { status });
}

/** A request body already written as JSON text (ROAR's signed canonical JSON), sent byte for byte. */
export class JsonText {
  constructor(readonly text: string) {}
}

/**
 * HTTP with peers: each exchange bounded by the timeout (body included) and a size cap, never retried; a JSON
 * reply read through the wire schema.
 */
export class PeerTransport {
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;
  readonly #headers: Record<string, string>;
  readonly #maxReplyBytes: number;

  constructor(options: TransportOptions = {}) {
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_SENDER_TIMEOUT_MS;
    this.#headers = peerHeaders(options);
    this.#maxReplyBytes = options.maxReplyBytes ?? MAX_REPLY_BYTES;
  }

  /** Posts a query or a turn and returns the peer's success reply; any failure is AgoraError('PEER_FAILURE'). */
  async post(url: string, payload: Record<string, unknown>, signal?: AbortSignal): Promise<QueryResult> {
    const response = await this.exchange('POST', url, payload, signal);
    const json = this.parseJson('POST', url, response);
    const parsed = peerResponseSchema.safeParse(json);
    if (!parsed.success) throw this.peerError('POST', url, response.status, json);
    const reply = parsed.data;
    if (reply.status === 'failure') throw peerFailure('POST', url, response.status, reply.error);
    if (reply.status === 'error') throw peerFailure('POST', url, response.status, reply.message);
    return {
      body: (reply.body ?? null) as JsonValue,
      ...(reply.conversationId ? { conversationId: reply.conversationId } : {}),
      ...(reply.conversationExpires !== undefined && Number.isFinite(reply.conversationExpires)
        ? { conversationExpires: reply.conversationExpires }
        : {}),
    };
  }

  /** A GET's body when the peer answers 2xx, else undefined (a document a peer does not serve). */
  async download(url: string, maxBytes: number, signal?: AbortSignal): Promise<Uint8Array | undefined> {
    const response = await this.exchange('GET', url, undefined, signal, maxBytes);
    return response.status >= 200 && response.status < 300 ? response.bytes : undefined;
  }

  /** A reply's JSON (a leading BOM allowed); a reply that is not JSON is a PEER_FAILURE naming the URL. */
  parseJson(method: PeerMethod, url: string, response: PeerResponse): unknown {
    const text = Buffer.from(response.bytes).toString('utf8');
    try {
      return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
    } catch {
      const excerpt = text.replace(/\s+/g, ' ').trim().slice(0, 80);
      throw new AgoraError(
        'PEER_FAILURE',
        `${method} ${url}: HTTP ${response.status}, not JSON${excerpt ? `: ${excerpt}` : ''}`,
        { status: response.status },
      );
    }
  }

  /** An error reply in either failure shape keeps the peer's text; anything else says it is not an Agora reply. */
  peerError(method: PeerMethod, url: string, status: number, json: unknown): AgoraError {
    const failure = peerResponseSchema.safeParse(json);
    if (failure.success && failure.data.status === 'failure')
      return peerFailure(method, url, status, failure.data.error);
    if (failure.success && failure.data.status === 'error')
      return peerFailure(method, url, status, failure.data.message);
    return new AgoraError('PEER_FAILURE', `${method} ${url}: HTTP ${status}, not an Agora reply`, { status });
  }

  /** One HTTP exchange, bounded by the timeout (body included) and a size cap; never retried. */
  async exchange(
    method: PeerMethod,
    url: string,
    payload?: unknown,
    signal?: AbortSignal,
    maxBytes = this.#maxReplyBytes,
  ): Promise<PeerResponse> {
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const fail = (error: unknown): never => {
      if (timeout.aborted && !signal?.aborted)
        throw new AgoraError('TIMEOUT', `${method} ${url}: timed out after ${this.#timeoutMs} ms`, { cause: error });
      if (signal?.aborted) throw signal.reason;
      throw new AgoraError('PEER_FAILURE', `${method} ${url}: ${networkFailure(error)}`, { cause: error });
    };
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method,
        headers: {
          ...this.#headers,
          accept: 'application/json',
          ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(payload === undefined
          ? {}
          : { body: payload instanceof JsonText ? payload.text : JSON.stringify(payload) }),
        signal: combined,
        redirect: method === 'GET' ? 'follow' : 'manual',
      });
    } catch (error) {
      return fail(error);
    }
    try {
      return { status: response.status, bytes: await readCapped(response, maxBytes, `${method} ${url}`) };
    } catch (error) {
      if (isAgoraError(error)) throw error;
      return fail(error);
    }
  }
}

/** Reads a reply's body, refusing one larger than `maxBytes` (declared or streamed). */
export async function readCapped(response: Response, maxBytes: number, what: string): Promise<Buffer> {
  const tooLarge = () =>
    new AgoraError('PEER_FAILURE', `${what}: reply larger than ${maxBytes} bytes`, { status: response.status });
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  if (!response.body) return Buffer.alloc(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size);
}

/** Options of {@link PeerTransport.getJson}. */
export type GetJsonOptions = { maxBytes?: number; signal?: AbortSignal; retries?: number };

// A GET is safe to repeat: a refused connection or a gateway's 502/503/504 is tried again (a timeout is not: it
// already cost the whole bound).
const RETRIED_STATUSES = new Set([502, 503, 504]);

/**
 * A GET's JSON, tried again (twice by default) when the connection fails or a gateway answers 502/503/504; a
 * non-2xx reply is a PEER_FAILURE naming the URL and status (the peer's text is not copied).
 */
export async function getJson(transport: PeerTransport, url: string, options: GetJsonOptions = {}): Promise<unknown> {
  const retries = options.retries ?? 2;
  for (let attempt = 0; ; attempt++) {
    let response: PeerResponse;
    try {
      response = await transport.exchange('GET', url, undefined, options.signal, options.maxBytes);
    } catch (error) {
      const retriable =
        isAgoraError(error) &&
        error.code === 'PEER_FAILURE' &&
        error.status === undefined &&
        !/larger than/.test(error.message);
      if (retriable && attempt < retries) continue;
      throw error;
    }
    if (RETRIED_STATUSES.has(response.status) && attempt < retries) continue;
    if (response.status < 200 || response.status > 299)
      throw new AgoraError('PEER_FAILURE', `GET ${url}: HTTP ${response.status}`, { status: response.status });
    return transport.parseJson('GET', url, response);
  }
}

/**
 * A `fetch` bounded as the transport's exchanges are, for a peer's own SDK (a2a-js): the caller's headers and token,
 * each wait bounded by the timeout (for the reply, and between two pieces of an event stream), every body capped;
 * a failure is an AgoraError naming the method and URL.
 */
export function boundedFetch(options: TransportOptions = {}): typeof fetch {
  const fetchImpl = options.fetch ?? globalThis.fetch;
  const timeoutMs = options.timeoutMs ?? DEFAULT_SENDER_TIMEOUT_MS;
  const maxBytes = options.maxReplyBytes ?? MAX_REPLY_BYTES;
  const extra = peerHeaders(options);
  return async (input, init = {}) => {
    const request = input instanceof Request ? input : undefined;
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const method = (init.method ?? request?.method ?? 'GET').toUpperCase();
    const what = `${method} ${url}`;
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(
        () => controller.abort(new AgoraError('TIMEOUT', `${what}: timed out after ${timeoutMs} ms`)),
        timeoutMs,
      );
    };
    const caller = init.signal ?? request?.signal ?? undefined;
    const signal = caller ? AbortSignal.any([caller, controller.signal]) : controller.signal;
    const fail = (error: unknown): never => {
      clearTimeout(timer);
      if (caller?.aborted) throw caller.reason;
      if (controller.signal.aborted) throw controller.signal.reason;
      if (isAgoraError(error)) throw error;
      throw new AgoraError('PEER_FAILURE', `${what}: ${networkFailure(error)}`, { cause: error });
    };
    const headers = new Headers(init.headers ?? request?.headers);
    for (const [name, value] of Object.entries(extra)) headers.set(name, value);
    arm();
    let response: Response;
    try {
      response = await fetchImpl(input, { ...init, headers, signal });
    } catch (error) {
      return fail(error);
    }
    const kept = new Headers(response.headers);
    kept.delete('content-length');
    kept.delete('content-encoding');
    if (/^text\/event-stream/i.test(response.headers.get('content-type') ?? '') && response.body) {
      let size = 0;
      const reader = response.body.getReader();
      const body = new ReadableStream<Uint8Array>({
        async pull(stream) {
          arm();
          try {
            const { done, value } = await reader.read();
            if (done) {
              clearTimeout(timer);
              stream.close();
              return;
            }
            size += value.byteLength;
            if (size > maxBytes) throw new AgoraError('PEER_FAILURE', `${what}: stream larger than ${maxBytes} bytes`);
            stream.enqueue(value);
          } catch (error) {
            await reader.cancel().catch(() => undefined);
            try {
              fail(error);
            } catch (failure) {
              stream.error(failure);
            }
          }
        },
        cancel: async () => {
          clearTimeout(timer);
          await reader.cancel().catch(() => undefined);
        },
      });
      return new Response(body, { status: response.status, statusText: response.statusText, headers: kept });
    }
    try {
      const bytes = await readCapped(response, maxBytes, what);
      clearTimeout(timer);
      return new Response(response.status === 204 || response.status === 304 ? null : bytes, {
        status: response.status,
        statusText: response.statusText,
        headers: kept,
      });
    } catch (error) {
      return fail(error);
    }
  };
}
