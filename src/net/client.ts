// The one outbound HTTP client: every request the framework makes to another machine (a peer, a hub, a protocol
// source) goes through it. It owns the bound on waiting, the cap on what is read, the retries (safe requests only),
// the bearer token (sent only to the origin it belongs to, never after a redirect elsewhere), the SSRF guard (at
// every connection and every redirect) and the wording of a failure (failure.ts).
import { AgoraError, isAgoraError } from '../errors.js';
import { guardRefusal, networkError, noAnswerWithin, requestName, type Wording } from './failure.js';
import { guardedFetch, type GuardOptions } from './guard.js';
import { readCapped } from './read.js';
import {
  injectContext,
  inSpan,
  SpanKind,
  spanFailed,
  TRACING,
  type Attributes,
  type Span,
  type SpanOptions,
} from '../telemetry/tracing.js';
import type { TokenSource } from './token-source.js';

/** Every default of the one client, in one place (durations in ms). */
export const CLIENT_DEFAULTS = {
  /** Bound on one exchange: until its whole reply is read (or, for a stream, until its headers). */
  timeoutMs: 30_000,
  /** Largest reply read, in bytes, after decompression. */
  maxReplyBytes: 16 * 1024 * 1024,
  /** Tries again after the first, for a safe request only (GET, HEAD, or one marked `idempotent`). */
  retries: 0,
  /** Redirects followed by a safe request; any other request gets the redirect as its reply. */
  maxRedirects: 5,
} as const;

/** A request body already written as JSON text (ROAR's signed canonical JSON), sent byte for byte. */
export class JsonText {
  constructor(readonly text: string) {}
}

/** A request as a failure names it: as asked, and the hop (a redirect's target) where it failed. */
export type RequestAt = { method: string; url: string; hop: string };

/** Options of {@link HttpClient}. */
export type HttpClientOptions = {
  /** The connector (default `globalThis.fetch`; ignored when `guard` is set). */
  fetch?: typeof fetch;
  /** Connect only to vetted addresses, at every connection and redirect (a URL a stranger gave). */
  guard?: GuardOptions;
  timeoutMs?: number;
  maxReplyBytes?: number;
  retries?: number;
  maxRedirects?: number;
  /** Bearer token (`Authorization: Bearer <token>`), sent only to `tokenOrigin`. */
  token?: string | undefined;
  /**
   * The origin (or origins) the token belongs to (default: the origin of each request as asked, never a redirect's
   * other one): a request elsewhere goes without it.
   */
  tokenOrigin?: string | readonly string[] | undefined;
  /**
   * Where a token renewed over time comes from (client credentials, `token-source.ts`), asked with each request's URL
   * that goes to `tokenOrigin`; wins over `token`.
   */
  tokenSource?: TokenSource | undefined;
  /** Headers sent with every request (a proxy's key, a tracing id); the token wins over an `authorization` here. */
  headers?: Record<string, string> | undefined;
  /** Words a failure from its reason (default `GET http://host/x: <reason>`). */
  describe?: (reason: string, at: RequestAt) => string;
};

/** Options of one request. */
export type RequestOptions = {
  /** A JSON body (sent as `application/json`), or JSON text sent as is. */
  json?: unknown;
  /** A body sent as given, with the caller's content type. */
  body?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  timeoutMs?: number;
  maxBytes?: number;
  retries?: number;
  /** A request that may be sent twice without harm (a GET is): only such a request is retried or redirected. */
  idempotent?: boolean;
  maxRedirects?: number;
  /** Hand over an event stream's body (`text/event-stream`) instead of reading it whole. */
  streams?: boolean;
};

/** A reply read whole (within the cap): its status, headers, bytes, the URL that answered; an event stream's body. */
export type HttpReply = {
  status: number;
  headers: Headers;
  bytes: Buffer;
  url: string;
  /** The live body of an event stream, when asked for with `streams`. */
  body?: ReadableStream<Uint8Array>;
};

const RETRIED_STATUSES = new Set([502, 503, 504]);
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** The `Authorization` value for a bearer token. */
export function bearer(token: string): string {
  return `Bearer ${token}`;
}

/** A client span's options: its kind and where it goes (the URL without its query or credentials). */
function clientSpan(method: string, url: string): SpanOptions {
  const attributes: Attributes = { 'http.request.method': method };
  try {
    const parsed = new URL(url);
    attributes['server.address'] = parsed.hostname;
    attributes['server.port'] = Number(parsed.port) || (parsed.protocol === 'https:' ? 443 : 80);
    attributes['url.full'] = `${parsed.origin}${parsed.pathname}`;
  } catch {
    // An invalid URL fails in the request itself, in its own words.
  }
  return { kind: SpanKind.CLIENT, attributes };
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

/**
 * The one outbound HTTP client. A reply of any status is returned (the caller reads its meaning); a request that
 * gets none fails with an AgoraError naming it: `TIMEOUT` (`no answer within 30 s`) or `PEER_FAILURE`.
 * @example
 * const client = new HttpClient({ token, timeoutMs: 5000 });
 * const { status, bytes } = await client.request('GET', url);
 */
export class HttpClient {
  readonly timeoutMs: number;
  readonly maxReplyBytes: number;
  readonly #options: HttpClientOptions;
  readonly #fetch: typeof fetch;
  readonly #headers: Record<string, string> = {};
  readonly #tokenOrigins: ReadonlySet<string | undefined> | undefined;

  constructor(options: HttpClientOptions = {}) {
    this.#options = options;
    const tokenOrigin = options.tokenOrigin;
    if (tokenOrigin !== undefined)
      this.#tokenOrigins = new Set((typeof tokenOrigin === 'string' ? [tokenOrigin] : tokenOrigin).map(originOf));
    this.#fetch = options.guard ? guardedFetch(options.guard) : (options.fetch ?? globalThis.fetch);
    this.timeoutMs = options.timeoutMs ?? CLIENT_DEFAULTS.timeoutMs;
    this.maxReplyBytes = options.maxReplyBytes ?? CLIENT_DEFAULTS.maxReplyBytes;
    for (const [name, value] of Object.entries(options.headers ?? {})) this.#headers[name.toLowerCase()] = value;
  }

  /** The words of a failure of a request (`GET http://host/x: <reason>`, or as `describe` words it). */
  describe(reason: string, at: RequestAt): string {
    return this.#options.describe?.(reason, at) ?? `${requestName(at.method, at.url)}: ${reason}`;
  }

  /** The wording of one request's failures, from their reason. */
  wording(method: string, url: string, hop = url): Wording {
    return (reason) => this.describe(reason, { method, url, hop });
  }

  /**
   * One request, its reply read whole within the cap and the time bound; retried only when safe. With `streams`, an
   * event stream is handed over once its headers came (its reader owns the body, and the bound between pieces).
   */
  request(method: string, url: string, options: RequestOptions = {}): Promise<HttpReply> {
    if (TRACING.on) return inSpan(method, clientSpan(method, url), (span) => this.#traced(span, method, url, options));
    return this.#request(method, url, options);
  }

  /** A request as a client span: the status it got, and `traceparent` naming the span (sent by `#headersFor`). */
  async #traced(span: Span, method: string, url: string, options: RequestOptions): Promise<HttpReply> {
    const reply = await this.#request(method, url, options);
    span.setAttribute('http.response.status_code', reply.status);
    if (reply.status >= 400) spanFailed(span, undefined, String(reply.status));
    return reply;
  }

  async #request(method: string, url: string, options: RequestOptions): Promise<HttpReply> {
    return this.#attempts(method, url, options, async (response, at) => {
      const type = response.headers.get('content-type') ?? '';
      if (options.streams && response.body && /^text\/event-stream/i.test(type))
        return {
          status: response.status,
          headers: response.headers,
          bytes: Buffer.alloc(0),
          url: at.hop,
          body: response.body,
        };
      const maxBytes = options.maxBytes ?? this.maxReplyBytes;
      const bytes = await readCapped(response, maxBytes, this.wording(method, url, at.hop));
      return { status: response.status, headers: response.headers, bytes, url: at.hop };
    });
  }

  /** A GET's JSON; a reply that is not 2xx fails naming the URL and status (the peer's text is not copied). */
  async getJson(url: string, options: RequestOptions = {}): Promise<unknown> {
    const reply = await this.request('GET', url, options);
    const words = this.wording('GET', url, reply.url);
    if (reply.status < 200 || reply.status > 299)
      throw new AgoraError('PEER_FAILURE', words(`HTTP ${reply.status}`), { status: reply.status });
    return parseJsonBytes(reply.bytes, reply.status, words);
  }

  /** Runs the attempts of a request: a failed connection or a gateway's 502/503/504 is tried again when safe. */
  async #attempts<T>(
    method: string,
    url: string,
    options: RequestOptions,
    read: (response: Response, at: RequestAt) => Promise<T>,
  ): Promise<T> {
    const safe = method === 'GET' || method === 'HEAD' || options.idempotent === true;
    const retries = safe ? (options.retries ?? this.#options.retries ?? CLIENT_DEFAULTS.retries) : 0;
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    for (let attempt = 0; ; attempt++) {
      const at: RequestAt = { method, url, hop: url };
      const timer = new AbortController();
      const clock = setTimeout(
        () => timer.abort(new AgoraError('TIMEOUT', this.describe(noAnswerWithin(timeoutMs), at))),
        timeoutMs,
      );
      const signal = options.signal ? AbortSignal.any([options.signal, timer.signal]) : timer.signal;
      try {
        const response = await this.#follow(at, options, safe, signal);
        if (safe && attempt < retries && RETRIED_STATUSES.has(response.status)) {
          await response.body?.cancel().catch(() => undefined);
          continue;
        }
        return await read(response, at);
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason;
        if (timer.signal.aborted) throw timer.signal.reason;
        if (safe && !isAgoraError(error) && !guardRefusal(error) && attempt < retries) continue;
        throw networkError((reason) => this.describe(reason, at), error);
      } finally {
        clearTimeout(clock);
      }
    }
  }

  /** Sends a request and follows its redirects (a safe request only), each hop vetted, the token kept to its origin. */
  async #follow(at: RequestAt, options: RequestOptions, safe: boolean, signal: AbortSignal): Promise<Response> {
    const tokenOrigins = this.#tokenOrigins ?? new Set([originOf(at.url)]);
    // A token from a source is asked for only when the request goes where it belongs.
    const source = this.#options.tokenSource;
    const token =
      source === undefined
        ? this.#options.token
        : tokenOrigins.has(originOf(at.url))
          ? await source.token(at.url)
          : undefined;
    const maxRedirects = options.maxRedirects ?? this.#options.maxRedirects ?? CLIENT_DEFAULTS.maxRedirects;
    const fail = (reason: string) => new AgoraError('PEER_FAILURE', this.describe(reason, at));
    for (let redirects = 0; ; redirects++) {
      const hop = new URL(at.hop);
      if (hop.protocol !== 'http:' && hop.protocol !== 'https:') throw fail(`unsupported scheme ${hop.protocol}`);
      const response = await this.#fetch(hop.href, {
        method: at.method,
        headers: this.#headersFor(hop.origin, hop.origin === originOf(at.url), tokenOrigins, options, token),
        ...(options.json !== undefined
          ? { body: options.json instanceof JsonText ? options.json.text : JSON.stringify(options.json) }
          : options.body !== undefined
            ? { body: options.body }
            : {}),
        signal,
        redirect: 'manual',
      });
      if (!safe || !REDIRECT_STATUSES.has(response.status)) return response;
      await response.body?.cancel().catch(() => undefined);
      const location = response.headers.get('location');
      if (!location) throw fail(`HTTP ${response.status} redirect without a Location header`);
      if (redirects >= maxRedirects) throw fail(`more than ${maxRedirects} redirects`);
      try {
        at.hop = new URL(location, hop).href;
      } catch {
        throw fail(`HTTP ${response.status} redirect to an invalid URL`);
      }
    }
  }

  /** A hop's headers: the client's, the request's, and the token only where it belongs. */
  #headersFor(
    origin: string,
    asAsked: boolean,
    tokenOrigins: ReadonlySet<string | undefined>,
    options: RequestOptions,
    token: string | undefined,
  ): Record<string, string> {
    const headers: Record<string, string> = { accept: 'application/json', ...this.#headers };
    for (const [name, value] of Object.entries(options.headers ?? {})) headers[name.toLowerCase()] = value;
    if (options.json !== undefined) headers['content-type'] = 'application/json';
    // A credential never follows a redirect to another origin.
    if (!asAsked) delete headers.authorization;
    if (token && tokenOrigins.has(origin)) headers.authorization = bearer(token);
    else if (token) delete headers.authorization;
    // The trace context goes to every hop (it names a span, nothing secret).
    injectContext(headers);
    return headers;
  }
}

/** A reply's JSON (a leading BOM allowed); one that is not JSON is a PEER_FAILURE quoting its start. */
export function parseJsonBytes(bytes: Uint8Array, status: number, words: Wording): unknown {
  const text = Buffer.from(bytes).toString('utf8');
  try {
    return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    const excerpt = text.replace(/\s+/g, ' ').trim().slice(0, 80);
    // A 2xx status is no failure of its own: only the body is named (`reply not JSON: <html>`).
    const what = status >= 200 && status <= 299 ? 'reply not JSON' : `HTTP ${status}, not JSON`;
    throw new AgoraError('PEER_FAILURE', words(`${what}${excerpt ? `: ${excerpt}` : ''}`), { status });
  }
}
