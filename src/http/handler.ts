import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { z } from 'zod';
import { AgoraError, describeError, isAgoraError } from '../errors.js';
import { consoleLogger } from '../log.js';
import { normalizeHash } from '../protocol/document.js';
import type { ReceiverApi, RequestContext } from '../receiver.js';
import { followUpRequestSchema, queryRequestSchema, type FollowUpRequest, type QueryRequest } from '../schemas.js';

/** Options of the HTTP edge, shared by `createHandler`, `startServer` and `agoraRouter`. */
export type HttpOptions = {
  /** Largest request body accepted, in bytes (default 1 MiB); larger → 413 `Request too large`. */
  maxBodyBytes?: number;
  /** The agent's public base URL, given to the receiver as `context.baseUrl`; else derived from the request. */
  publicUrl?: string;
  /** Bearer tokens; when non-empty, every route but `GET /wellknown`, `/.wellknown`, `/protocols/:hash` and `OPTIONS` needs one. */
  tokens?: string[];
  /** At most `max` requests per client address per `windowMs` (fixed window); more → 429 with `Retry-After`. */
  rateLimit?: { windowMs: number; max: number };
  /** Where internal errors go (default: stderr). */
  logger?: { error(message: string): void; warn(message: string): void };
  /** The rate limiter's clock in milliseconds (default `Date.now`), injected by tests. */
  now?: () => number;
};

/** A parsed request as the core sees it: method, path relative to the mount point, lower-case headers, raw body. */
export type CoreRequest = {
  method: string;
  /** Path relative to the mount point, still percent-encoded; a query string is ignored. */
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The raw body, `undefined` when none (or when `loadBody` reads it). */
  body: Buffer | undefined;
  /** Reads the body on demand: called only after routing, auth and rate limit passed, so rejected bodies are never read. */
  loadBody?: () => Promise<Buffer>;
  remoteAddress?: string;
  /** Base URL of the mount point, e.g. `https://example.com/agora`. */
  baseUrl?: string;
  /** Aborted when the client goes away, passed on to the receiver. */
  signal?: AbortSignal;
};

/** A response as the core answers it; `headers` include `content-type` and `content-length`. */
export type CoreResponse = { status: number; headers: Record<string, string>; body: string };

/** Default largest request body: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

const JSON_TYPE = 'application/json; charset=utf-8';
const TEXT_TYPE = 'text/plain; charset=utf-8';
const METRICS_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
const END_BODY = '{"status":"success","body":null}';
const HEALTH_BODY = '{"status":"ok"}';
const NOT_A_JSON_OBJECT = 'Request body must be a JSON object';
// JSON.parse copes with any depth but JSON.stringify (and any recursive walk downstream) overflows the
// stack on deep nesting; no protocol needs more than this.
const MAX_DEPTH = 100;
const CONVERSATION_ID = /^[A-Za-z0-9_-]{1,128}$/;
// Only a plain host[:port] may become part of a link we hand out; anything else is ignored.
const SAFE_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
const SAFE_BASE_URL = /^https?:\/\/(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?(?:\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?$/;
const MAX_RATE_LIMITED_CLIENTS = 10_000;
const EMPTY = Buffer.alloc(0);

type RouteKind = 'root' | 'wellknown' | 'health' | 'metrics' | 'protocol' | 'conversation';
type Route = { kind: RouteKind; param: string; allow: string; isPublic: boolean };

const GET_ALLOW = 'GET, HEAD, OPTIONS';
const ROOT: Route = { kind: 'root', param: '', allow: 'POST, OPTIONS', isPublic: false };
const WELLKNOWN: Route = { kind: 'wellknown', param: '', allow: GET_ALLOW, isPublic: true };
const HEALTH: Route = { kind: 'health', param: '', allow: GET_ALLOW, isPublic: false };
const METRICS: Route = { kind: 'metrics', param: '', allow: GET_ALLOW, isPublic: false };

function matchRoute(rawPath: string): Route | undefined {
  let path = rawPath;
  const query = path.indexOf('?');
  if (query !== -1) path = path.slice(0, query);
  // Liberal: `/wellknown/` is `/wellknown`.
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  switch (path) {
    case '':
    case '/':
      return ROOT;
    case '/wellknown':
    case '/.wellknown':
      return WELLKNOWN;
    case '/health':
      return HEALTH;
    case '/metrics':
      return METRICS;
  }
  // The whole rest is the hash: an unencoded base64 `/` is accepted too.
  if (path.startsWith('/protocols/')) return { kind: 'protocol', param: path.slice(11), allow: GET_ALLOW, isPublic: true };
  if (path.startsWith('/conversations/')) {
    return { kind: 'conversation', param: path.slice(15), allow: 'POST, DELETE, OPTIONS', isPublic: false };
  }
  return undefined;
}

/** Whether a mount-relative path is one of the routes of spec §2 (adapters pass other paths on). */
export function isAgoraPath(path: string): boolean {
  return matchRoute(path) !== undefined;
}

function respond(status: number, contentType: string, body: string, headOnly = false): CoreResponse {
  return {
    status,
    headers: { 'content-type': contentType, 'content-length': String(Buffer.byteLength(body)) },
    body: headOnly ? '' : body,
  };
}

function failure(status: number, message: string): CoreResponse {
  return respond(status, JSON_TYPE, JSON.stringify({ status: 'failure', error: message }));
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

// Fixed window per client; Map order is window-start order, so the oldest entries are evicted first.
class RateLimiter {
  private readonly clients = new Map<string, { count: number; resetAt: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly max: number,
    private readonly now: () => number,
  ) {}

  /** Seconds until the client may retry, or 0 when this request is allowed. */
  hit(client: string): number {
    const now = this.now();
    let entry = this.clients.get(client);
    if (entry === undefined || entry.resetAt <= now) {
      if (entry !== undefined) this.clients.delete(client);
      else if (this.clients.size >= MAX_RATE_LIMITED_CLIENTS) this.evict(now);
      entry = { count: 0, resetAt: now + this.windowMs };
      this.clients.set(client, entry);
    }
    entry.count += 1;
    return entry.count > this.max ? Math.max(1, Math.ceil((entry.resetAt - now) / 1000)) : 0;
  }

  private evict(now: number): void {
    for (const [client, entry] of this.clients) {
      if (entry.resetAt > now && this.clients.size < MAX_RATE_LIMITED_CLIENTS) break;
      this.clients.delete(client);
    }
  }
}

// A byte scan, not a walk of the parsed value, so a deep body is refused before JSON.parse allocates it.
function nestingExceeds(bytes: Buffer, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < bytes.length; index++) {
    const byte = bytes[index];
    if (inString) {
      if (byte === 0x5c) index++;
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) inString = true;
    else if (byte === 0x5b || byte === 0x7b) {
      if (++depth > max) return true;
    } else if (byte === 0x5d || byte === 0x7d) depth--;
  }
  return false;
}

function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const field = issue.path.map(String).join('.');
      // The schema's messages already name their field ("protocolHash must be…"); prefix only the others.
      return field === '' || issue.message.startsWith(String(issue.path[0])) ? issue.message : `${field}: ${issue.message}`;
    })
    .join('; ');
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The whole of spec §2 as a framework-free function; adapters (node:http, Express, edge runtimes) only translate.
 * @example const handle = createHandler(receiver); const response = await handle({ method: 'GET', path: '/wellknown', headers: {}, body: undefined });
 */
export function createHandler(receiver: ReceiverApi, options: HttpOptions = {}): (request: CoreRequest) => Promise<CoreResponse> {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const publicUrl = options.publicUrl?.replace(/\/+$/, '');
  const logger = options.logger ?? consoleLogger();
  // Digests make every comparison the same length, so timingSafeEqual leaks neither content nor length.
  const tokenDigests = (options.tokens ?? []).map(sha256);
  const limiter = options.rateLimit ? new RateLimiter(options.rateLimit.windowMs, options.rateLimit.max, options.now ?? Date.now) : undefined;

  function authorized(request: CoreRequest): boolean {
    const header = firstHeader(request.headers.authorization);
    const match = header === undefined ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
    const digest = sha256(match?.[1] ?? '');
    let ok = false;
    // No early exit: the time taken does not say which token, if any, matched.
    for (const token of tokenDigests) ok = timingSafeEqual(digest, token) || ok;
    return ok && match !== null;
  }

  // Nearly every request carries the same Host: remember the last one rather than test and build it each time.
  let lastHost: string | undefined;
  let lastHostUrl: string | undefined;

  function contextOf(request: CoreRequest): RequestContext {
    let baseUrl = publicUrl;
    // An adapter builds its base URL from the Host header too, so it is checked the same way.
    if (baseUrl === undefined && request.baseUrl !== undefined) {
      baseUrl = SAFE_BASE_URL.test(request.baseUrl) ? request.baseUrl.replace(/\/+$/, '') : undefined;
    } else if (baseUrl === undefined) {
      const host = firstHeader(request.headers.host);
      if (host !== lastHost) {
        lastHost = host;
        lastHostUrl = host !== undefined && SAFE_HOST.test(host) ? `http://${host}` : undefined;
      }
      baseUrl = lastHostUrl;
    }
    return { baseUrl, remoteAddress: request.remoteAddress, signal: request.signal };
  }

  // Synchronous on purpose: each async layer costs a microtask per request on the hot path.
  function parseObject(raw: Buffer): Record<string, unknown> {
    if (raw.length > maxBodyBytes) throw new AgoraError('REQUEST_TOO_LARGE');
    if (raw.length === 0) throw new AgoraError('BAD_REQUEST', NOT_A_JSON_OBJECT);
    if (raw.length > MAX_DEPTH && nestingExceeds(raw, MAX_DEPTH)) {
      throw new AgoraError('BAD_REQUEST', `Request body is nested deeper than ${MAX_DEPTH} levels`);
    }
    let text = raw.toString('utf8');
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new AgoraError('BAD_REQUEST', NOT_A_JSON_OBJECT);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new AgoraError('BAD_REQUEST', NOT_A_JSON_OBJECT);
    return value as Record<string, unknown>;
  }

  // zod costs ~0.2 µs on a typical request against ~2 µs for JSON.parse alone (measured), so one schema
  // stays the single source of truth rather than a hand-written fast path.
  function parseQuery(raw: Buffer): QueryRequest {
    const parsed = queryRequestSchema.safeParse(parseObject(raw));
    if (!parsed.success) throw new AgoraError('BAD_REQUEST', formatIssues(parsed.error));
    return parsed.data as QueryRequest;
  }

  function parseFollowUp(raw: Buffer): FollowUpRequest {
    const parsed = followUpRequestSchema.safeParse(parseObject(raw));
    if (!parsed.success) throw new AgoraError('BAD_REQUEST', formatIssues(parsed.error));
    const { protocolHash, protocolSources, body } = parsed.data;
    const followUp: FollowUpRequest = { body: body as FollowUpRequest['body'] };
    if (protocolHash !== undefined) followUp.protocolHash = protocolHash;
    if (protocolSources !== undefined) followUp.protocolSources = protocolSources;
    return followUp;
  }

  function toFailure(error: unknown, request: CoreRequest): CoreResponse {
    if (isAgoraError(error)) {
      const status = typeof error.httpStatus === 'number' ? error.httpStatus : 500;
      if (status >= 500) logger.error(`${request.method} ${request.path}: ${describeError(error)}`);
      return failure(status, error.message);
    }
    // A client that went away makes the receiver abort: not an internal error worth a log line.
    if (!request.signal?.aborted) {
      const details = error instanceof Error && error.stack ? error.stack : describeError(error);
      logger.error(`${request.method} ${request.path} failed: ${details}`);
    }
    return failure(500, 'Internal error');
  }

  // One async function for the whole request: every extra async layer costs a microtask on the hot path.
  return async function handle(request: CoreRequest): Promise<CoreResponse> {
    try {
      const { method } = request;
      if (limiter) {
        const retryAfter = limiter.hit(request.remoteAddress ?? '');
        if (retryAfter > 0) {
          const response = failure(429, 'Too many requests');
          response.headers['retry-after'] = String(retryAfter);
          return response;
        }
      }
      const route = matchRoute(request.path);
      if (route === undefined) return failure(404, 'Not found');
      if (method === 'OPTIONS') return { status: 204, headers: { allow: route.allow, 'content-length': '0' }, body: '' };
      const isHead = method === 'HEAD';
      const isRead = method === 'GET' || isHead;
      if (tokenDigests.length > 0 && !(isRead && route.isPublic) && !authorized(request)) {
        const response = failure(401, 'Unauthorized');
        response.headers['www-authenticate'] = 'Bearer';
        return response;
      }

      switch (route.kind) {
        case 'root': {
          if (method !== 'POST') break;
          const query = parseQuery(request.body ?? (request.loadBody ? await request.loadBody() : EMPTY));
          return respond(200, JSON_TYPE, JSON.stringify(await receiver.query(query, contextOf(request))));
        }
        case 'conversation': {
          if (method !== 'POST' && method !== 'DELETE') break;
          const id = route.param;
          // Checked before the receiver: a malformed id can never name a conversation, and never reaches a store.
          if (!CONVERSATION_ID.test(id)) return failure(404, 'Conversation not found');
          if (method === 'DELETE') {
            await receiver.end(id);
            return respond(200, JSON_TYPE, END_BODY);
          }
          const followUp = parseFollowUp(request.body ?? (request.loadBody ? await request.loadBody() : EMPTY));
          return respond(200, JSON_TYPE, JSON.stringify(await receiver.followUp(id, followUp, contextOf(request))));
        }
        case 'wellknown':
          if (!isRead) break;
          return respond(200, JSON_TYPE, JSON.stringify(await receiver.wellknown(contextOf(request))), isHead);
        case 'protocol': {
          if (!isRead) break;
          let hash: string | undefined;
          try {
            hash = normalizeHash(decodeURIComponent(route.param));
          } catch {
            hash = undefined;
          }
          const text = hash === undefined ? undefined : await receiver.document(hash);
          if (text === undefined) return failure(404, 'Protocol not found');
          const response = respond(200, TEXT_TYPE, text, isHead);
          // Content-addressed, so cacheable forever; nosniff because the text may come from a peer.
          response.headers['cache-control'] = 'public, max-age=31536000, immutable';
          response.headers['x-content-type-options'] = 'nosniff';
          return response;
        }
        case 'metrics':
          if (!isRead) break;
          return respond(200, METRICS_TYPE, await receiver.metrics(), isHead);
        case 'health':
          if (!isRead) break;
          return respond(200, JSON_TYPE, HEALTH_BODY, isHead);
      }
      const response = failure(405, 'Method not allowed');
      response.headers.allow = route.allow;
      return response;
    } catch (error) {
      return toFailure(error, request);
    }
  };
}

/**
 * Reads a node request body with a size cap: a too-large Content-Length is refused before reading, and a stream
 * that passes the cap stops being buffered (the rest is discarded) and rejects with `REQUEST_TOO_LARGE`.
 */
export function readBody(request: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = request.headers['content-length'];
  if (declared !== undefined) {
    const length = Number(declared);
    if (length > maxBytes) return Promise.reject(new AgoraError('REQUEST_TOO_LARGE'));
    if (length === 0) return Promise.resolve(EMPTY);
  }
  if (request.readableEnded) return Promise.resolve(EMPTY);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
      request.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        // Still flowing with no listener: the rest is read and dropped, so the client can read our 413
        // (clients such as Python's requests send the whole body before reading); requestTimeout bounds it.
        cleanup();
        chunks.length = 0;
        reject(new AgoraError('REQUEST_TOO_LARGE'));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const onClose = () => {
      cleanup();
      // The client is gone: nobody reads the answer, and it is not an internal error worth logging.
      reject(new AgoraError('BAD_REQUEST', 'Request aborted by the client'));
    };
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
    request.on('close', onClose);
  });
}

// One object per request, with its method on the prototype: no closures on the hot path.
class NodeCoreRequest implements CoreRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: undefined = undefined;
  readonly remoteAddress: string | undefined;
  signal: AbortSignal | undefined = undefined;

  constructor(
    private readonly incoming: IncomingMessage,
    private readonly maxBodyBytes: number,
  ) {
    this.method = incoming.method ?? 'GET';
    this.path = incoming.url ?? '/';
    this.headers = incoming.headers;
    this.remoteAddress = incoming.socket.remoteAddress;
  }

  loadBody(): Promise<Buffer> {
    return readBody(this.incoming, this.maxBodyBytes);
  }
}

function disconnectSignal(response: ServerResponse): AbortSignal {
  const controller = new AbortController();
  if (response.closed) controller.abort();
  else response.once('close', () => response.writableFinished || controller.abort());
  return controller.signal;
}

function rawFailure(status: number, reason: string, message: string): string {
  const body = JSON.stringify({ status: 'failure', error: message });
  return (
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: ${JSON_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `Connection: close\r\n\r\n${body}`
  );
}

const BAD_REQUEST_RAW = rawFailure(400, 'Bad Request', 'Bad request');
const TIMEOUT_RAW = rawFailure(408, 'Request Timeout', 'Request timeout');
const HEADERS_TOO_LARGE_RAW = rawFailure(431, 'Request Header Fields Too Large', 'Request header fields too large');
const CONNECT_RAW = rawFailure(405, 'Method Not Allowed', 'Method not allowed');

// Node would answer these without a body, or drop the socket; the spec wants JSON for every error.
function onClientError(error: Error & { code?: string }, socket: Duplex): void {
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code !== 'ECONNRESET' && socket.writable && !inFlight?.headersSent) {
    socket.write(
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? TIMEOUT_RAW : error.code === 'HPE_HEADER_OVERFLOW' ? HEADERS_TOO_LARGE_RAW : BAD_REQUEST_RAW,
    );
  }
  socket.destroy();
}

function onConnect(_request: IncomingMessage, socket: Duplex): void {
  if (socket.writable) socket.write(CONNECT_RAW);
  socket.destroy();
}

function onCheckExpectation(_request: IncomingMessage, response: ServerResponse): void {
  const result = failure(417, 'Expectation failed');
  response.shouldKeepAlive = false;
  response.writeHead(result.status, result.headers).end(result.body);
}

/** Options of `startServer`: the HTTP options plus where to listen and the slow-client timeouts. */
export type ServerOptions = HttpOptions & {
  /** Port to listen on (default 3000; 0 picks a free one). */
  port?: number;
  /** Interface to listen on (default: all). */
  host?: string;
  /** Time allowed to send the request headers (default 10 s): cuts off slow-loris clients. */
  headersTimeoutMs?: number;
  /** Time allowed to send the whole request (default 30 s). */
  requestTimeoutMs?: number;
  /** Idle time before a keep-alive connection is closed (default: Node's, 5 s). */
  keepAliveTimeoutMs?: number;
  /**
   * Give the receiver a `context.signal` aborted when the client disconnects, to stop LLM calls nobody will read
   * (default false: an AbortController per request halved the hot path's throughput, measured).
   */
  abortOnDisconnect?: boolean;
};

/** A running server: its address and a graceful `close`. */
export type RunningServer = { server: Server; url: string; port: number; close(): Promise<void> };

/**
 * Serves a receiver on node:http.
 * @example const { url, close } = await startServer(receiver, { port: 0 });
 */
export async function startServer(receiver: ReceiverApi, options: ServerOptions = {}): Promise<RunningServer> {
  const handle = createHandler(receiver, options);
  const logger = options.logger ?? consoleLogger();
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  // Node refuses a headers timeout longer than the request timeout.
  const headersTimeout = Math.min(options.headersTimeoutMs ?? 10_000, requestTimeout > 0 ? requestTimeout : Infinity);
  const abortOnDisconnect = options.abortOnDisconnect === true;
  let closing = false;

  // Requests still being answered (their client may be gone): close() waits for them before the caller closes
  // the receiver and its store under their feet.
  let inFlight = 0;
  let drained: (() => void) | undefined;

  async function serve(incoming: IncomingMessage, response: ServerResponse): Promise<void> {
    inFlight += 1;
    try {
      await answer(incoming, response);
    } finally {
      inFlight -= 1;
      if (inFlight === 0) drained?.();
    }
  }

  async function answer(incoming: IncomingMessage, response: ServerResponse): Promise<void> {
    let result: CoreResponse;
    try {
      const request = new NodeCoreRequest(incoming, maxBodyBytes);
      if (abortOnDisconnect) request.signal = disconnectSignal(response);
      result = await handle(request);
    } catch (error) {
      logger.error(`${incoming.method} ${incoming.url} failed: ${describeError(error)}`);
      result = failure(500, 'Internal error');
    }
    if (response.headersSent || response.destroyed) return;
    // While closing, no connection is kept alive, so close() does not wait on idle sockets.
    if (closing) response.shouldKeepAlive = false;
    try {
      response.writeHead(result.status, result.headers).end(result.body);
    } catch (error) {
      // A rejection here would be unhandled and end the process: log, and drop this one connection.
      logger.error(`${incoming.method} ${incoming.url}: could not write the response: ${describeError(error)}`);
      response.destroy();
    }
  }

  const server = createServer(
    {
      requestTimeout,
      headersTimeout,
      // Node checks the two timeouts on this interval (30 s by default), far too coarse for a 10 s limit.
      connectionsCheckingInterval: Math.max(25, Math.min(1000, Math.floor(Math.min(headersTimeout, requestTimeout || Infinity) / 4))),
      // Liberal: a request without Host is answered (Node would send a bare 400 without a JSON body).
      requireHostHeader: false,
    },
    (incoming, response) => {
      void serve(incoming, response);
    },
  );
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  server.on('clientError', onClientError);
  server.on('connect', onConnect);
  server.on('checkExpectation', onCheckExpectation);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 3000, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // After start, a server error (EMFILE on accept, say) is logged, never thrown at the process.
  server.on('error', (error) => logger.error(`HTTP server: ${describeError(error)}`));

  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : (options.port ?? 3000);
  const host = options.host === undefined || options.host === '0.0.0.0' || options.host === '::' || options.host === '' ? '127.0.0.1' : options.host;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  function close(): Promise<void> {
    closing = true;
    const sockets = new Promise<void>((resolve) => {
      const timer = setTimeout(() => server.closeAllConnections(), 5000);
      timer.unref();
      server.close(() => {
        clearTimeout(timer);
        resolve();
      });
      server.closeIdleConnections();
    });
    const requests = new Promise<void>((resolve) => {
      if (inFlight === 0) return resolve();
      drained = resolve;
      // Bounded like the sockets: a routine stuck past its own time limit does not hold the shutdown forever.
      setTimeout(resolve, 5000).unref();
    });
    return Promise.all([sockets, requests]).then(() => undefined);
  }

  return { server, url, port, close };
}
