import { createHash, timingSafeEqual } from 'node:crypto';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { AgoraError, describeError, isAgoraError } from '../errors.js';
import { consoleLogger, type Logger } from '../log.js';
import { requestTarget } from '../http/_node-request.js';
import type { Hub } from './hub.js';
import type { ChainRun } from './records.js';

/** Options of the hub's HTTP edge. */
export type HubHttpOptions = {
  /** Bearer tokens; when non-empty, every write (register, publish, delete, checkpoint), `/runs` and `/metrics` need one. */
  tokens?: string[];
  /** Largest request body, in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  /** At most `max` requests per client address per `windowMs`; more → 429. */
  rateLimit?: { windowMs: number; max: number };
  logger?: Logger;
};

/** A request as the hub's core sees it: the path still carries its query string. */
export type HubRequest = {
  method: string;
  /** Path relative to the mount point, with its query string. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body?: Buffer;
  /** Reads the body on demand, after routing and auth passed. */
  loadBody?: () => Promise<Buffer>;
  remoteAddress?: string;
};

/** A response of the hub's core. */
export type HubResponse = { status: number; headers: Record<string, string>; body: string };

const JSON_TYPE = 'application/json; charset=utf-8';
const MAX_LIMIT = 1000;

function respond(status: number, value: unknown, contentType = JSON_TYPE): HubResponse {
  const body = typeof value === 'string' && contentType !== JSON_TYPE ? value : JSON.stringify(value);
  return { status, headers: { 'content-type': contentType, 'content-length': String(Buffer.byteLength(body)) }, body };
}

function failure(status: number, message: string): HubResponse {
  return respond(status, { status: 'failure', error: message });
}

const sha256 = (value: string) => createHash('sha256').update(value).digest();

function limitOf(params: URLSearchParams): number | undefined {
  const raw = params.get('limit');
  if (raw === null) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new AgoraError('BAD_REQUEST', 'limit must be a positive integer');
  return Math.min(value, MAX_LIMIT);
}

/**
 * The hub's HTTP API as a framework-free function; `startHub` serves it on node:http, and it mounts anywhere
 * a `(request) → response` function fits.
 * @example const handle = createHubHandler(hub, { tokens: ['secret'] }); await handle({ method: 'GET', url: '/agents?q=weather', headers: {} });
 */
export function createHubHandler(hub: Hub, options: HubHttpOptions = {}): (request: HubRequest) => Promise<HubResponse> {
  const logger = options.logger ?? consoleLogger('agora-hub');
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  const tokenDigests = (options.tokens ?? []).map(sha256);
  const limiter = options.rateLimit ? new RateLimiterMemory({ points: options.rateLimit.max, duration: Math.max(1, Math.ceil(options.rateLimit.windowMs / 1000)) }) : undefined;
  const counts = new Map<string, number>();

  function authorized(request: HubRequest): boolean {
    if (tokenDigests.length === 0) return true;
    const header = request.headers.authorization;
    const value = Array.isArray(header) ? header[0] : header;
    const match = value === undefined ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(value);
    const digest = sha256(match?.[1] ?? '');
    let ok = false;
    for (const token of tokenDigests) ok = timingSafeEqual(digest, token) || ok;
    return ok && match !== null;
  }

  async function jsonBody(request: HubRequest): Promise<Record<string, unknown>> {
    const raw = request.body ?? (request.loadBody ? await request.loadBody() : Buffer.alloc(0));
    if (raw.length > maxBodyBytes) throw new AgoraError('REQUEST_TOO_LARGE');
    let value: unknown;
    try {
      value = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new AgoraError('BAD_REQUEST', 'Request body must be a JSON object');
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new AgoraError('BAD_REQUEST', 'Request body must be a JSON object');
    return value as Record<string, unknown>;
  }

  function metrics(): string {
    const lines = ['# TYPE agora_hub_requests_total counter'];
    for (const [key, count] of counts) {
      const [route, status] = key.split(' ');
      lines.push(`agora_hub_requests_total{route="${route}",status="${status}"} ${count}`);
    }
    const { records } = hub.directory.view;
    let up = 0;
    for (const record of records.values()) if (record.status === 'up') up += 1;
    lines.push('# TYPE agora_hub_agents gauge', `agora_hub_agents{status="up"} ${up}`, `agora_hub_agents{status="down"} ${records.size - up}`);
    return `${lines.join('\n')}\n`;
  }

  async function dispatch(request: HubRequest, segments: string[], params: URLSearchParams): Promise<HubResponse> {
    const { method } = request;
    const [collection, id, extra] = segments;
    const write = method !== 'GET' && method !== 'HEAD';
    const guarded = write || collection === 'runs' || collection === 'metrics';
    if (guarded && !authorized(request)) {
      const response = failure(401, 'Unauthorized');
      response.headers['www-authenticate'] = 'Bearer';
      return response;
    }
    const notAllowed = (allow: string) => {
      const response = failure(405, 'Method not allowed');
      response.headers.allow = allow;
      return response;
    };
    if (extra !== undefined) return failure(404, 'Not found');
    switch (collection) {
      case 'health':
        return respond(200, { status: 'ok' });
      case 'metrics':
        await hub.directory.refresh();
        return respond(200, metrics(), 'text/plain; version=0.0.4; charset=utf-8');
      case 'agents': {
        if (id === undefined) {
          if (method === 'POST') return respond(201, await hub.register((await jsonBody(request)) as { url: string }));
          if (method !== 'GET') return notAllowed('GET, POST');
          const limit = limitOf(params);
          const agents = await hub.agents({ q: params.get('q') ?? undefined, protocol: params.get('protocol') ?? undefined, includeDown: params.get('all') === 'true', ...(limit ? { limit } : {}) });
          return respond(200, { agents });
        }
        if (method === 'DELETE') return (await hub.directory.remove(id)) ? respond(200, { status: 'success', removed: id }) : failure(404, `No agent ${id}`);
        if (method !== 'GET') return notAllowed('GET, DELETE');
        const agent = await hub.directory.resolve(id);
        return agent ? respond(200, agent) : failure(404, `No agent ${id}`);
      }
      case 'protocols': {
        if (id === undefined) {
          if (method === 'POST') {
            const body = await jsonBody(request);
            return respond(201, await hub.catalogue.publish(body.hash, body.text));
          }
          if (method !== 'GET') return notAllowed('GET, POST');
          return respond(200, { protocols: await hub.protocols(params.get('q') ?? undefined, limitOf(params) ?? 50) });
        }
        if (method !== 'GET') return notAllowed('GET');
        const text = await hub.catalogue.text(id);
        if (text === undefined) return failure(404, 'Protocol not found');
        const response = respond(200, text, 'text/plain; charset=utf-8');
        response.headers['cache-control'] = 'public, max-age=31536000, immutable';
        response.headers['x-content-type-options'] = 'nosniff';
        return response;
      }
      case 'route': {
        if (method !== 'GET') return notAllowed('GET');
        const goal = params.get('goal');
        if (goal === null) throw new AgoraError('BAD_REQUEST', 'goal is required (GET /route?goal=…)');
        return respond(200, await hub.route(goal, params.get('handoff') ?? undefined));
      }
      case 'runs': {
        if (id === undefined) {
          if (method !== 'GET') return notAllowed('GET');
          return respond(200, { runs: await hub.runs(params.get('all') === 'true') });
        }
        if (method === 'PUT') {
          const body = await jsonBody(request);
          const run = body.run as ChainRun | undefined;
          if (run?.id !== id) throw new AgoraError('BAD_REQUEST', 'run.id must be the id in the path');
          await hub.saveRun(run, typeof body.leaseMs === 'number' ? body.leaseMs : 60_000, body.force === true);
          return respond(200, { status: 'success' });
        }
        if (method === 'DELETE') {
          await hub.store.deleteRun(id);
          return respond(200, { status: 'success' });
        }
        if (method !== 'GET') return notAllowed('GET, PUT, DELETE');
        const run = await hub.getRun(id);
        return run ? respond(200, run) : failure(404, `No chain ${id}`);
      }
      case 'sync':
        if (method !== 'POST') return notAllowed('POST');
        return respond(200, { reports: await hub.syncPeers() });
    }
    return failure(404, 'Not found');
  }

  return async function handle(request: HubRequest): Promise<HubResponse> {
    let route = 'unknown';
    let response: HubResponse;
    try {
      if (limiter) {
        try {
          await limiter.consume(request.remoteAddress ?? '');
        } catch (rejection) {
          const wait = (rejection as { msBeforeNext?: number }).msBeforeNext ?? 1000;
          response = failure(429, 'Too many requests');
          response.headers['retry-after'] = String(Math.max(1, Math.ceil(wait / 1000)));
          return response;
        }
      }
      const url = requestTarget(request.url);
      if (url === undefined) return failure(400, 'Malformed request target');
      const segments = url.pathname.split('/').filter(Boolean).map((segment) => decodeURIComponent(segment));
      route = ['health', 'metrics', 'agents', 'protocols', 'route', 'runs', 'sync'].includes(segments[0] ?? '') ? segments[0]! : 'unknown';
      if (request.method === 'OPTIONS') return { status: 204, headers: { allow: 'GET, POST, PUT, DELETE, OPTIONS', 'content-length': '0' }, body: '' };
      response = await dispatch(request, segments, url.searchParams);
    } catch (error) {
      if (isAgoraError(error)) {
        const status = error.code === 'SOURCE_FAILED' || error.code === 'PEER_FAILURE' ? 502 : error.httpStatus === 200 ? 400 : error.httpStatus;
        // 502 is a peer's failure, 503 the store down (its connection reports that once): neither is ours to log.
        if (status >= 500 && status !== 502 && status !== 503) logger.error(`${request.method} ${request.url}: ${describeError(error)}`);
        response = failure(status, error.message);
      } else if (error instanceof URIError) {
        response = failure(400, 'Malformed percent-encoding in the path');
      } else {
        logger.error(`${request.method} ${request.url} failed: ${error instanceof Error && error.stack ? error.stack : describeError(error)}`);
        response = failure(500, 'Internal error');
      }
    }
    const key = `${route} ${response.status}`;
    if (counts.size < 200 || counts.has(key)) counts.set(key, (counts.get(key) ?? 0) + 1);
    return response;
  };
}
