// Mounts and their composition: every surface (the Agora wire, each face, the hub API, rooms, dashboards) declares
// its routes and its error shape; `compose` puts them behind one guard and finds a request's mount by its path.
import type { Logger } from '../log.js';
import { isCrossSite, RateLimiter, TokenCheck, type RateLimitOptions } from './guard.js';
import { admitBearer, metadataMount, principalOf, withChallenge } from './bearer.js';
import { hostRule, misdirected } from './host.js';
import type { BearerVerifier } from './oauth.js';
import { cleanPath, header, type EdgeRequest } from './request.js';
import { failure, type EdgeResponse } from './response.js';
import { failureResponse, statusOf } from './status.js';

/** A route a mount declares: a path, exact or (with `prefix`) with everything under it. */
export type MountRoute = {
  /** `/wellknown`, or with `prefix` `/roar` (which takes `/roar` and `/roar/…`). */
  path: string;
  prefix?: boolean;
  /** Methods it takes (default any); a method no route of its path takes goes to the first route (its 405). */
  methods?: readonly string[];
  /** Answered without a token: `true` for every method, `'read'` for GET and HEAD (default: a token when tokens are set). */
  public?: boolean | 'read';
  /** The `Allow` header an OPTIONS request is answered with (default `GET, HEAD, POST, OPTIONS`). */
  allow?: string;
  /** Whether the route takes WebSocket upgrades (the mount's `upgrade`). */
  socket?: boolean;
  /** The route's name, for the mount's own dispatch (`request.route.name`). */
  name?: string;
  /** The scope kind of its requests other than GET and HEAD (those are `read`): `query` (default) or `admin`. */
  access?: 'query' | 'admin';
};

/** A request after routing: its route and mount. */
export type MountedRequest = EdgeRequest & { route?: MountRoute; mount?: Mount };

/** A surface behind the edge: its routes, its answers, and how a failure looks on its wire. */
export interface Mount {
  /** A short name for logs (`agora`, `roar`, `hub`, `rooms`, `dashboard`). */
  readonly name: string;
  readonly routes: readonly MountRoute[];
  /** A body cap smaller than the edge's, for this mount's requests. */
  readonly maxBodyBytes?: number;
  /** Request headers of its wire beyond the usual ones (`mcp-session-id`…), which browsers may then send cross-site. */
  readonly headers?: readonly string[];
  /** Answers a routed request; the guard has passed. A synchronous `undefined` declines it (the next route, else 404). */
  handle(request: MountedRequest): Promise<EdgeResponse> | EdgeResponse | undefined;
  /** Answers a WebSocket upgrade on a `socket` route: a refusal, or a response whose `upgrade` accepts it. */
  upgrade?(request: MountedRequest): Promise<EdgeResponse> | EdgeResponse;
  /** A failure on this mount's wire (ROAR's error body, A2A's JSON-RPC error, the Agora failure…). */
  failure(status: number, message: string): EdgeResponse;
  /** A refused WebSocket message on this mount's wire, as a frame (default: the socket is closed). */
  socketFailure?(status: number, message: string): string;
  /** Stops what the mount keeps running (feeds, timers); called when the server closes. */
  close?(): void | Promise<void>;
}

/** The edge's settings: one guard for every mount. */
export type EdgeOptions = {
  /** Bearer tokens; when non-empty, every route that is not public needs one. */
  tokens?: readonly string[];
  /** At most `max` requests (HTTP, upgrades, WebSocket messages) per client per `windowMs`; more → 429. */
  rateLimit?: RateLimitOptions;
  /** Largest request body, counted after decompression (default 1 MiB); larger → 413. */
  maxBodyBytes?: number;
  /** Origins allowed to make state-changing requests from a browser (`--cors-origin`); `*` allows any. */
  corsOrigins?: readonly string[];
  /**
   * Host names served beside loopback names and IP addresses (`--allowed-host`; `*`: any). Without a token the
   * edge answers any other `Host` with 421 (DNS rebinding); given, the rule holds with a token too.
   */
  allowedHosts?: readonly string[];
  /** The server's public base URL (`--public-url`): its host is served. */
  publicUrl?: string;
  /** Access tokens of an OAuth authorization server, beside `tokens` (an `OAuthResource`); its metadata is served. */
  oauth?: BearerVerifier;
  logger?: Pick<Logger, 'error' | 'warn'> & Partial<Pick<Logger, 'debug'>>;
};

/** Mounts composed behind one guard. */
export type Edge = {
  readonly mounts: readonly Mount[];
  readonly tokens: TokenCheck;
  /** The access-token verifier, when the edge takes OAuth tokens. */
  readonly oauth?: BearerVerifier | undefined;
  readonly maxBodyBytes: number;
  readonly corsOrigins: ReadonlySet<string>;
  /** Answers any request (404 in the first mount's shape when no route takes it). */
  handle(request: EdgeRequest): Promise<EdgeResponse>;
  /** Whether a route takes this path (adapters mounted at a host's root pass others on). */
  claims(method: string, path: string): boolean;
  /** Answers an upgrade: a refusal, or a response whose `upgrade` accepts it. */
  upgrade(request: EdgeRequest): Promise<EdgeResponse>;
  /**
   * The guard's rate limit on one more event from a client (a WebSocket message), counted by its principal when
   * known: seconds to wait, or 0.
   */
  hit(client: string | undefined, principal?: string): Promise<number>;
  /** A thrown value as the failure of the request's mount; internal errors are logged with an id, never shown. */
  failure(request: MountedRequest, error: unknown): EdgeResponse;
  close(): Promise<void>;
};

/** Default largest request body: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

type Entry = { route: MountRoute; mount: Mount };

const NONE: readonly Entry[] = [];

// The entries that take a method; none: the first answers it (with its 405).
function byMethod(all: Entry[], method: string): Entry[] {
  if (all.length < 2) return all;
  const taking = all.filter(({ route }) => route.methods === undefined || route.methods.includes(method));
  return taking.length > 0 ? taking : [all[0]!];
}

/** The request headers a browser may send to any mount; each mount adds its wire's own (`Mount.headers`). */
const PREFLIGHT_HEADERS = ['authorization', 'content-type', 'accept', 'last-event-id'];

/**
 * Puts mounts behind one guard: the rate limit (every request), then routing by path, the Host rule, OPTIONS (with CORS
 * headers for an allowed origin), the cross-site rule and the token; a route's mount answers the rest. Earlier
 * mounts win a path they share (by method: OAP's `GET /` and Agora's `POST /`).
 * @example const edge = compose([agoraMount(receiver), ...faces], { tokens: ['secret'] });
 */
export function compose(mounts: readonly Mount[], options: EdgeOptions = {}): Edge {
  const tokens = new TokenCheck(options.tokens ?? []);
  const oauth = options.oauth;
  const limiter = options.rateLimit ? new RateLimiter(options.rateLimit) : undefined;
  const corsOrigins = new Set(options.corsOrigins ?? []);
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const allowsHost = hostRule({
    allowedHosts: options.allowedHosts,
    publicUrl: options.publicUrl,
    // An access token is a credential too: a server that asks for one answers any name it is reached by.
    credentialsRequired: tokens.enabled || oauth !== undefined,
  });
  const logger = options.logger;
  const fallback = mounts[0];
  const preflightHeaders = [...new Set([...PREFLIGHT_HEADERS, ...mounts.flatMap((mount) => mount.headers ?? [])])].join(
    ', ',
  );
  const exact = new Map<string, Entry[]>();
  const prefixes: (Entry & { stem: string })[] = [];
  for (const mount of oauth ? [...mounts, metadataMount(oauth, failure)] : mounts) {
    for (const route of mount.routes) {
      const path = route.path.length > 1 && route.path.endsWith('/') ? route.path.slice(0, -1) : route.path;
      if (route.prefix) prefixes.push({ route, mount, stem: path });
      else exact.set(path, [...(exact.get(path) ?? []), { route, mount }]);
    }
  }
  // Longest first: `/rooms/` before `/`.
  prefixes.sort((a, b) => b.stem.length - a.stem.length);

  // What a path and method resolve to, for paths without a prefix route (the Agora routes, the cards): found once,
  // then kept by path and method, so the hot path (`POST /`) allocates nothing to be routed.
  const resolved = new Map<string, Map<string, Entry[]>>();

  function lookup(method: string, path: string): readonly Entry[] {
    const clean = cleanPath(path);
    let under: Entry[] | undefined;
    for (const entry of prefixes) {
      if (clean === entry.stem || (clean.startsWith(entry.stem) && clean.charCodeAt(entry.stem.length) === 47))
        (under ??= []).push(entry);
    }
    const found = exact.get(clean);
    if (under !== undefined) return byMethod(found === undefined ? under : [...found, ...under], method);
    if (found === undefined) return NONE;
    if (found.length === 1) return found;
    let methods = resolved.get(clean);
    if (methods === undefined) resolved.set(clean, (methods = new Map()));
    let entries = methods.get(method);
    if (entries === undefined) {
      entries = byMethod(found, method);
      // Bounded: methods are a stranger's bytes (paths here are the declared ones).
      if (methods.size < 16) methods.set(method, entries);
    }
    return entries;
  }

  function notFound(): EdgeResponse {
    return fallback ? fallback.failure(404, 'Not found') : failure(404, 'Not found');
  }

  function refusal(mount: Mount, status: number, message: string, headers: Record<string, string> = {}): EdgeResponse {
    const response = mount.failure(status, message);
    Object.assign(response.headers, headers);
    return response;
  }

  function preflight(request: EdgeRequest, route: MountRoute): EdgeResponse {
    const headers: Record<string, string> = { allow: route.allow ?? 'GET, HEAD, POST, OPTIONS', 'content-length': '0' };
    const origin = request.headers.origin;
    if (typeof origin === 'string' && (corsOrigins.has(origin) || corsOrigins.has('*'))) {
      headers['access-control-allow-origin'] = origin;
      headers['access-control-allow-methods'] = headers.allow!;
      headers['access-control-allow-headers'] = preflightHeaders;
      headers['access-control-max-age'] = '600';
      headers.vary = 'Origin';
    }
    return { status: 204, headers, body: '' };
  }

  // The guard and the route's answer, for one routed request; a refusal is in the mount's own shape.
  function guarded(
    request: MountedRequest,
    entries: readonly Entry[],
    upgrade: boolean,
    admitted = false,
  ): Promise<EdgeResponse> | EdgeResponse {
    const { method } = request;
    for (const { route, mount } of entries) {
      const host = header(request, 'host');
      if (allowsHost !== undefined && host !== undefined && !allowsHost(host)) {
        logger?.warn(`refused ${method} ${cleanPath(request.path)} for host ${JSON.stringify(host.slice(0, 100))}`);
        return refusal(mount, 421, misdirected(host));
      }
      if (method === 'OPTIONS' && !upgrade) return preflight(request, route);
      if (isCrossSite(method, request.headers, corsOrigins, upgrade)) {
        logger?.warn(
          `refused a cross-site ${method} ${cleanPath(request.path)} (Origin ${String(request.headers.origin ?? 'none').slice(0, 100)})`,
        );
        return refusal(mount, 403, 'Cross-site request refused');
      }
      const open = route.public === true || (route.public === 'read' && (method === 'GET' || method === 'HEAD'));
      if (oauth !== undefined && !admitted)
        return admitBearer(oauth, tokens, request, route, open).then((refused) =>
          refused
            ? refusal(mount, refused.status, refused.message, refused.headers)
            : guarded(request, entries, upgrade, true),
        );
      if (oauth === undefined && tokens.enabled && !open && !tokens.accepts(request.headers.authorization))
        return refusal(mount, 401, 'Unauthorized', { 'www-authenticate': 'Bearer' });
      request.route = route;
      request.mount = mount;
      const answer = upgrade
        ? route.socket && mount.upgrade
          ? mount.upgrade(request)
          : refusal(mount, 404, 'Not found')
        : mount.handle(request);
      if (answer !== undefined)
        return withCors(request, oauth && open ? withChallenge(oauth, request, answer) : answer);
    }
    return notFound();
  }

  // An allowed origin may read what it asked for.
  function withCors(
    request: EdgeRequest,
    answer: Promise<EdgeResponse> | EdgeResponse,
  ): Promise<EdgeResponse> | EdgeResponse {
    if (corsOrigins.size === 0) return answer;
    const origin = request.headers.origin;
    if (typeof origin !== 'string' || !(corsOrigins.has(origin) || corsOrigins.has('*'))) return answer;
    const add = (response: EdgeResponse) => {
      response.headers['access-control-allow-origin'] = origin;
      response.headers.vary = 'Origin';
      return response;
    };
    return answer instanceof Promise ? answer.then(add) : add(answer);
  }

  async function limited(request: MountedRequest, entries: readonly Entry[], upgrade: boolean): Promise<EdgeResponse> {
    // Counted by who asks when a token says so (a bad token: by the address it came from).
    const retryAfter = await hit(request.remoteAddress, await principalOf(oauth, tokens, request));
    if (retryAfter > 0)
      return refusal(entries[0]?.mount ?? fallback!, 429, 'Too many requests', { 'retry-after': String(retryAfter) });
    return guarded(request, entries, upgrade);
  }

  function hit(client: string | undefined, principal?: string): Promise<number> {
    return limiter ? limiter.hit(client, principal) : Promise.resolve(0);
  }

  function routed(request: MountedRequest, upgrade: boolean): Promise<EdgeResponse> {
    try {
      const entries = lookup(request.method, request.path);
      if (entries.length > 0 && entries[0]!.mount.maxBodyBytes !== undefined) {
        const capped = request as MountedRequest & { maxBodyBytes?: number };
        if (capped.maxBodyBytes !== undefined)
          capped.maxBodyBytes = Math.min(capped.maxBodyBytes, entries[0]!.mount.maxBodyBytes);
      }
      if (limiter) return limited(request, entries, upgrade).catch((error: unknown) => toFailure(request, error));
      if (entries.length === 0) return Promise.resolve(notFound());
      const answer = guarded(request, entries, upgrade);
      return answer instanceof Promise ? answer : Promise.resolve(answer);
    } catch (error) {
      return Promise.resolve(toFailure(request, error));
    }
  }

  function toFailure(request: MountedRequest, error: unknown): EdgeResponse {
    const mount = request.mount ?? fallback;
    return failureResponse(request, error, {
      status: statusOf,
      shape: mount ? (status, message) => mount.failure(status, message) : failure,
      logger,
    });
  }

  return {
    mounts,
    tokens,
    oauth,
    maxBodyBytes,
    corsOrigins,
    handle: (request) => routed(request, false),
    upgrade: (request) => routed(request, true),
    claims: (method, path) => lookup(method, path).length > 0,
    hit,
    failure: toFailure,
    async close() {
      await Promise.all(mounts.map((mount) => mount.close?.()));
    },
  };
}
