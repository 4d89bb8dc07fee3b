// The hub's HTTP API as a mount: the directory, the protocol database, routing, chain checkpoints, peer sync and
// metrics. The guard (tokens, rate limit, body cap, cross-site rule), OPTIONS and 404s are the edge's.
import { z } from 'zod';
import { AgoraError, isAgoraError } from '../errors.js';
import { readJson } from '../edge/body.js';
import type { Mount, MountedRequest, MountRoute } from '../edge/mount.js';
import { requestTarget } from '../edge/request.js';
import { failure, json, respond, type EdgeResponse } from '../edge/response.js';
import { statusOf } from '../edge/status.js';
import { bearerToken, callerKey } from '../edge/guard.js';
import { publicRecord, registrantOf } from './registration.js';
import type { Hub } from './hub.js';
import type { ChainRun } from './records.js';

/** Options of {@link hubMount}. */
export type HubMountOptions = {
  /** Largest request body, in bytes (default: the edge's, 1 MiB). */
  maxBodyBytes?: number;
};

const GET_ALLOW = 'GET, HEAD, OPTIONS';
const MAX_LIMIT = 1000;
const METRICS_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * The hub's routes: reads of the directory, the catalogue and routing are public; writes (register, publish,
 * delete, checkpoint, sync), `/runs` and `/metrics` need a token when tokens are set.
 */
export const HUB_ROUTES: readonly MountRoute[] = [
  { path: '/health', public: true, allow: GET_ALLOW },
  { path: '/agents', prefix: true, public: 'read', access: 'admin', allow: 'GET, HEAD, POST, DELETE, OPTIONS' },
  { path: '/protocols', prefix: true, public: 'read', access: 'admin', allow: 'GET, HEAD, POST, OPTIONS' },
  { path: '/route', public: 'read', allow: GET_ALLOW },
  { path: '/runs', prefix: true, access: 'admin', allow: 'GET, HEAD, PUT, DELETE, OPTIONS' },
  { path: '/sync', public: 'read', access: 'admin', allow: 'POST, OPTIONS' },
  { path: '/metrics', allow: GET_ALLOW },
];

const ROUTE_NAMES = new Set(HUB_ROUTES.map((route) => route.path.slice(1)));

const objectSchema = z.record(z.string(), z.unknown());

function limitOf(params: URLSearchParams): number | undefined {
  const raw = params.get('limit');
  if (raw === null) return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new AgoraError('BAD_REQUEST', 'limit must be a positive integer');
  return Math.min(value, MAX_LIMIT);
}

/** `?offset=`: how many results a listing page skips (default 0). */
function offsetOf(params: URLSearchParams): number {
  const raw = params.get('offset');
  if (raw === null) return 0;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 0)
    throw new AgoraError('BAD_REQUEST', 'offset must be a non-negative integer');
  return value;
}

/** A listing page's body: its items, and (for listings, not word searches) the total with the page's place in it. */
function pageBody(
  name: string,
  items: unknown[],
  total: number | undefined,
  offset: number,
  limit: number,
): Record<string, unknown> {
  return { [name]: items, ...(total !== undefined ? { total, offset, limit } : {}) };
}

/** The bearer token a request carries, if any. */
function bearerOf(request: MountedRequest): string | undefined {
  return bearerToken(request.headers.authorization);
}

function notAllowed(allow: string): EdgeResponse {
  const response = failure(405, 'Method not allowed');
  response.headers.allow = allow;
  return response;
}

function text(body: string, contentType: string): EdgeResponse {
  return respond(200, contentType, body);
}

/** The path's segments, percent-decoded; a malformed encoding is a 400. */
function segmentsOf(url: URL): string[] {
  try {
    return url.pathname
      .split('/')
      .filter(Boolean)
      .map((segment) => decodeURIComponent(segment));
  } catch {
    throw new AgoraError('BAD_REQUEST', 'Malformed percent-encoding in the path');
  }
}

/**
 * The hub's HTTP API as a mount: compose it with the rooms and the dashboard (`startHub` does), or mount it alone.
 * @example const edge = compose([hubMount(hub)], { tokens: ['secret'] });
 */
export function hubMount(hub: Hub, options: HubMountOptions = {}): Mount {
  // Requests answered by route and status, for /metrics; bounded (statuses are few, routes fixed).
  const counts = new Map<string, number>();

  async function metrics(): Promise<string> {
    const lines = ['# TYPE agora_hub_requests_total counter'];
    for (const [key, count] of counts) {
      const [route, status] = key.split(' ');
      lines.push(`agora_hub_requests_total{route="${route}",status="${status}"} ${count}`);
    }
    const { up, down } = await hub.agentCounts();
    lines.push(
      '# TYPE agora_hub_agents gauge',
      `agora_hub_agents{status="up"} ${up}`,
      `agora_hub_agents{status="down"} ${down}`,
    );
    return `${lines.join('\n')}\n`;
  }

  async function agents(
    request: MountedRequest,
    id: string | undefined,
    params: URLSearchParams,
  ): Promise<EdgeResponse> {
    const { method } = request;
    if (id === undefined) {
      if (method === 'POST') {
        const body = (await readJson(request, objectSchema)) as {
          url: string;
          name?: string;
          description?: string;
          capabilities?: string[];
        };
        const record = await hub.register({
          url: body.url,
          name: body.name,
          description: body.description,
          capabilities: body.capabilities,
          client: callerKey(request.remoteAddress, request.principal),
          // The caller as the guard found it (an access token's subject outlives the token), else its static token.
          registrant: registrantOf(request.principal ?? bearerOf(request)),
        });
        return json(201, publicRecord(record));
      }
      if (method !== 'GET' && method !== 'HEAD') return notAllowed('GET, POST');
      const limit = limitOf(params) ?? 50;
      const offset = offsetOf(params);
      // Down agents are listed with their status (as OAP's and ARP's listings do); `?status=up` leaves them out.
      const includeDown = params.get('status') !== 'up';
      const page = await hub.agentPage({
        q: params.get('q') ?? undefined,
        protocol: params.get('protocol') ?? undefined,
        includeDown,
        limit,
        offset,
      });
      return json(200, pageBody('agents', page.agents.map(publicRecord), page.total, offset, limit));
    }
    if (method === 'DELETE')
      return (await hub.removeAgent(id))
        ? json(200, { status: 'success', removed: id })
        : failure(404, `No agent ${id}`);
    if (method !== 'GET' && method !== 'HEAD') return notAllowed('GET, DELETE');
    const agent = await hub.agent(id);
    return agent ? json(200, publicRecord(agent)) : failure(404, `No agent ${id}`);
  }

  async function protocols(
    request: MountedRequest,
    id: string | undefined,
    params: URLSearchParams,
  ): Promise<EdgeResponse> {
    const { method } = request;
    if (id === undefined) {
      if (method === 'POST') {
        const body = await readJson(request, objectSchema);
        return json(201, await hub.publish(body.hash, body.text, callerKey(request.remoteAddress, request.principal)));
      }
      if (method !== 'GET' && method !== 'HEAD') return notAllowed('GET, POST');
      const limit = limitOf(params) ?? 50;
      const offset = offsetOf(params);
      const page = await hub.protocolPage(params.get('q') ?? undefined, limit, offset);
      return json(200, pageBody('protocols', page.protocols, page.total, offset, limit));
    }
    if (method !== 'GET' && method !== 'HEAD') return notAllowed('GET');
    const document = await hub.protocolText(id);
    if (document === undefined) return failure(404, 'Protocol not found');
    const response = text(document, 'text/plain; charset=utf-8');
    response.headers['cache-control'] = 'public, max-age=31536000, immutable';
    response.headers['x-content-type-options'] = 'nosniff';
    return response;
  }

  async function runs(request: MountedRequest, id: string | undefined, params: URLSearchParams): Promise<EdgeResponse> {
    const { method } = request;
    if (id === undefined) {
      if (method !== 'GET' && method !== 'HEAD') return notAllowed('GET');
      return json(200, { runs: await hub.runs(params.get('all') === 'true') });
    }
    if (method === 'PUT') {
      const body = await readJson(request, objectSchema);
      const run = body.run as ChainRun | undefined;
      if (run?.id !== id) throw new AgoraError('BAD_REQUEST', 'run.id must be the id in the path');
      await hub.saveRun(run, typeof body.leaseMs === 'number' ? body.leaseMs : undefined, body.force === true);
      return json(200, { status: 'success' });
    }
    if (method === 'DELETE') {
      // The chain's lease, as a PUT takes it: `?owner=` names the caller, `?force=true` takes the chain over.
      await hub.deleteRun(id, params.get('owner') ?? undefined, params.get('force') === 'true');
      return json(200, { status: 'success' });
    }
    if (method !== 'GET' && method !== 'HEAD') return notAllowed('GET, PUT, DELETE');
    const run = await hub.getRun(id);
    return run ? json(200, run) : failure(404, `No chain ${id}`);
  }

  async function dispatch(
    request: MountedRequest,
    collection: string | undefined,
    id: string | undefined,
    params: URLSearchParams,
  ): Promise<EdgeResponse> {
    const { method } = request;
    const isRead = method === 'GET' || method === 'HEAD';
    switch (collection) {
      case 'health':
        return isRead ? json(200, { status: 'ok' }) : notAllowed('GET');
      case 'metrics':
        if (!isRead) return notAllowed('GET');
        return text(await metrics(), METRICS_TYPE);
      case 'agents':
        return agents(request, id, params);
      case 'protocols':
        return protocols(request, id, params);
      case 'route': {
        if (!isRead) return notAllowed('GET');
        const goal = params.get('goal');
        if (goal === null) throw new AgoraError('BAD_REQUEST', 'goal is required (GET /route?goal=…)');
        return json(200, await hub.route(goal, params.get('handoff') ?? undefined));
      }
      case 'runs':
        return runs(request, id, params);
      case 'sync':
        if (method !== 'POST') return notAllowed('POST');
        return json(200, { reports: await hub.syncPeers() });
    }
    return failure(404, 'Not found');
  }

  async function handle(request: MountedRequest): Promise<EdgeResponse> {
    let route = 'unknown';
    let status = 500;
    try {
      const url = requestTarget(request.path);
      if (url === undefined) throw new AgoraError('BAD_REQUEST', 'Malformed request target');
      const [collection, id, extra] = segmentsOf(url);
      if (collection !== undefined && ROUTE_NAMES.has(collection)) route = collection;
      const response =
        extra !== undefined ? failure(404, 'Not found') : await dispatch(request, collection, id, url.searchParams);
      status = response.status;
      return response;
    } catch (error) {
      // The edge answers it in the hub's shape; counted here by the status it will get.
      if (isAgoraError(error)) status = error.code === 'STORE_UNAVAILABLE' ? 503 : statusOf(error);
      throw error;
    } finally {
      const key = `${route} ${status}`;
      if (counts.size < 200 || counts.has(key)) counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }

  return {
    name: 'hub',
    routes: HUB_ROUTES,
    maxBodyBytes: options.maxBodyBytes,
    handle,
    failure,
  };
}
