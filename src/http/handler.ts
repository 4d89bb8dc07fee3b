import { randomBytes } from 'node:crypto';
import { describeError, isAgoraError } from '../errors.js';
import { consoleLogger } from '../log.js';
import { normalizeHash } from '../protocol/document.js';
import type { FaceRequest } from '../faces/_http.js';
import type { FacesConfig } from '../faces/mount.js';
import type { ReceiverApi, RequestContext } from '../receiver.js';
import { parseFollowUpRequest, parseQueryRequest } from '../schemas.js';
import { rateLimitOf, TokenCheck, type RateLimitOptions } from './_limits.js';
import { failure, JSON_TYPE, respond, type CoreResponse } from './_response.js';
import { matchRoute } from './_routes.js';
import { openReplyStream, parseLastEventId, resumedStream, wantsEventStream, type StreamingResponse } from './streaming.js';

export type { CoreResponse } from './_response.js';
export { isAgoraPath } from './_routes.js';

/** Options of the HTTP edge, shared by `createHandler`, `startServer` and `agoraRouter`. */
export type HttpOptions = {
  /** Largest request body accepted, in bytes (default 1 MiB); larger → 413 `Request too large`. */
  maxBodyBytes?: number;
  /** The agent's public base URL, given to the receiver as `context.baseUrl`; else derived from the request. */
  publicUrl?: string;
  /** Bearer tokens; when non-empty, every route but `GET /wellknown`, `/.wellknown`, `/protocols/:hash`, `/health`, `/ready` and `OPTIONS` needs one. */
  tokens?: string[];
  /**
   * At most `max` requests per client address (IPv6: per /64) per `windowMs` (fixed window); more → 429 with
   * `Retry-After`. With `redis`, the counts live there (under `prefix`, default `agora:`), shared by every process.
   */
  rateLimit?: RateLimitOptions;
  /** Where internal errors go (default: stderr); with `debug`, `startServer` logs one line per request. */
  logger?: { error(message: string): void; warn(message: string): void; debug?(message: string): void };
  /** The ROAR, OAP and A2A faces (default: all, with the receiver's name and memory); `false` serves Agora alone. */
  faces?: FacesConfig | false;
  /** Clock in milliseconds (default `Date.now`) for the faces' signature freshness, injected by tests. */
  now?: () => number;
};

/**
 * A parsed request as the core sees it: method, path relative to the mount point (a query string is ignored),
 * lower-case headers, the raw body or a `loadBody` called only after routing, auth and rate limit passed. The faces
 * take the same object, so it is their `FaceRequest` with the id the logs know it by.
 */
export type CoreRequest = FaceRequest & {
  /** This request's id in the logs (set by adapters that log requests); one is made up for an internal error otherwise. */
  id?: string;
};

/** Default largest request body: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

const TEXT_TYPE = 'text/plain; charset=utf-8';
const METRICS_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
const END_BODY = '{"status":"success","body":null}';
const HEALTH_BODY = '{"status":"ok"}';
const READY_BODY = '{"status":"ready"}';
const DEGRADED_BODY = '{"status":"degraded","store":"unavailable"}';
// Seconds a client is asked to wait when the store is unavailable: about one reconnection attempt.
const STORE_RETRY_AFTER = '2';
const CONVERSATION_ID = /^[A-Za-z0-9_-]{1,128}$/;
// Only a plain host[:port] may become part of a link we hand out; anything else is ignored.
const SAFE_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
const SAFE_BASE_URL = /^https?:\/\/(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?(?:\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?$/;
const EMPTY = Buffer.alloc(0);

/** A new request id: 12 random base64url characters. */
export function requestId(): string {
  return randomBytes(9).toString('base64url');
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The whole of spec §2 as a framework-free function; adapters (node:http, Express, edge runtimes) only translate.
 * @example const handle = createHandler(receiver); const response = await handle({ method: 'GET', path: '/wellknown', headers: {}, body: undefined });
 */
export function createHandler(
  receiver: ReceiverApi,
  options: HttpOptions = {},
  /** The rate limit, when an adapter shares one with the faces (default: made from `options.rateLimit`). */
  limit: ((client: string | undefined) => Promise<number>) | undefined = rateLimitOf(options),
): (request: CoreRequest) => Promise<StreamingResponse> {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const publicUrl = options.publicUrl?.replace(/\/+$/, '');
  const logger = options.logger ?? consoleLogger();
  const tokens = new TokenCheck(options.tokens ?? []);

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

  function toFailure(error: unknown, request: CoreRequest): CoreResponse {
    if (isAgoraError(error)) {
      const status = typeof error.httpStatus === 'number' ? error.httpStatus : 500;
      if (error.code === 'STORE_UNAVAILABLE') {
        // Not logged per request: the connection's watcher logs the outage once.
        const response = failure(503, 'Store unavailable');
        response.headers['retry-after'] = STORE_RETRY_AFTER;
        return response;
      }
      if (status === 413) {
        // The rest of an oversize body is not worth reading: the connection ends with this answer.
        const response = failure(413, error.message);
        response.headers.connection = 'close';
        return response;
      }
      if (status !== 500) {
        if (status >= 500) logger.error(`${request.method} ${request.path}: ${describeError(error)}`);
        return failure(status, error.message);
      }
      return internalError(request, describeError(error));
    }
    // A client that went away makes the receiver abort: not an internal error worth a log line.
    if (request.signal?.aborted) return failure(500, 'Internal error');
    return internalError(request, error instanceof Error && error.stack ? error.stack : describeError(error));
  }

  // What went wrong stays in the log; the client gets a fixed text and the id that finds the log line.
  function internalError(request: CoreRequest, details: string): CoreResponse {
    const id = request.id ?? requestId();
    logger.error(`request ${id}: ${request.method} ${request.path} failed: ${details}`);
    const response = failure(500, `Internal error (request ${id})`);
    response.headers['x-request-id'] = id;
    return response;
  }

  // A query, the hot path: a small async function on purpose, since V8 keeps an async function's whole register file
  // each time it suspends, and the one function for every route had many.
  async function answerQuery(request: CoreRequest): Promise<StreamingResponse> {
    try {
      const query = parseQueryRequest(request.body ?? (request.loadBody ? await request.loadBody() : EMPTY), maxBodyBytes);
      if (receiver.queryStream && wantsEventStream(request.headers.accept)) return openReplyStream(receiver.queryStream(query, contextOf(request)));
      return respond(200, JSON_TYPE, JSON.stringify(await receiver.query(query, contextOf(request))));
    } catch (error) {
      return toFailure(error, request);
    }
  }

  // The checks every route shares (the rate limit aside), then the route's own function.
  function routed(request: CoreRequest): StreamingResponse | Promise<StreamingResponse> {
    const { method } = request;
    const route = matchRoute(request.path);
    if (route === undefined) return failure(404, 'Not found');
    if (method === 'OPTIONS') return { status: 204, headers: { allow: route.allow, 'content-length': '0' }, body: '' };
    const isRead = method === 'GET' || method === 'HEAD';
    if (tokens.enabled && !(isRead && route.isPublic) && !tokens.accepts(firstHeader(request.headers.authorization))) {
      const response = failure(401, 'Unauthorized');
      response.headers['www-authenticate'] = 'Bearer';
      return response;
    }
    return route.kind === 'root' && method === 'POST' ? answerQuery(request) : answerOther(request, route);
  }

  async function limited(request: CoreRequest, rateLimit: (client: string | undefined) => Promise<number>): Promise<StreamingResponse> {
    try {
      const retryAfter = await rateLimit(request.remoteAddress);
      if (retryAfter > 0) {
        const response = failure(429, 'Too many requests');
        response.headers['retry-after'] = String(retryAfter);
        return response;
      }
      return await routed(request);
    } catch (error) {
      return toFailure(error, request);
    }
  }

  // Every route but a query.
  async function answerOther(request: CoreRequest, route: NonNullable<ReturnType<typeof matchRoute>>): Promise<StreamingResponse> {
    try {
      const { method } = request;
      const isHead = method === 'HEAD';
      const isRead = method === 'GET' || isHead;
      switch (route.kind) {
        case 'root':
          break;
        case 'conversation': {
          if (method !== 'POST' && method !== 'DELETE') break;
          const id = route.param;
          // Checked before the receiver: a malformed id can never name a conversation, and never reaches a store.
          if (!CONVERSATION_ID.test(id)) return failure(404, 'Conversation not found');
          if (method === 'DELETE') {
            await receiver.end(id);
            return respond(200, JSON_TYPE, END_BODY);
          }
          const followUp = parseFollowUpRequest(request.body ?? (request.loadBody ? await request.loadBody() : EMPTY), maxBodyBytes);
          if (receiver.followUpStream && wantsEventStream(request.headers.accept)) return openReplyStream(receiver.followUpStream(id, followUp, contextOf(request)));
          return respond(200, JSON_TYPE, JSON.stringify(await receiver.followUp(id, followUp, contextOf(request))));
        }
        case 'events': {
          if (method !== 'GET') break;
          if (!CONVERSATION_ID.test(route.param) || !receiver.events) return failure(404, 'Conversation not found');
          const lastEventId = parseLastEventId(request.headers['last-event-id']);
          const controller = new AbortController();
          const events = await receiver.events(route.param, lastEventId, { ...contextOf(request), signal: controller.signal });
          return resumedStream(events, controller);
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
        case 'ready': {
          if (!isRead) break;
          if ((await receiver.ready?.()) === false) {
            const response = respond(503, JSON_TYPE, DEGRADED_BODY, isHead);
            response.headers['retry-after'] = STORE_RETRY_AFTER;
            return response;
          }
          return respond(200, JSON_TYPE, READY_BODY, isHead);
        }
      }
      const response = failure(405, 'Method not allowed');
      response.headers.allow = route.allow;
      return response;
    } catch (error) {
      return toFailure(error, request);
    }
  }

  return function handle(request: CoreRequest): Promise<StreamingResponse> {
    if (limit) return limited(request, limit);
    try {
      return Promise.resolve(routed(request));
    } catch (error) {
      return Promise.resolve(toFailure(error, request));
    }
  };
}
