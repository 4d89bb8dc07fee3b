import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { AgoraError } from './errors.js';
import { createHandler, DEFAULT_MAX_BODY_BYTES, isAgoraPath, type CoreRequest, type HttpOptions } from './http/handler.js';
import { agoraEnabled, facesFor, isFacePath } from './faces/mount.js';
import { writeFaceResponse } from './faces/node.js';
import { rateLimitOf } from './http/_limits.js';
import { readBody } from './http/server.js';
import { writeEventStream, type StreamingOptions } from './http/streaming.js';
import { Receiver, type ReceiverApi } from './receiver.js';
import { createAgentDashboard, type AgentDashboard } from './dashboard/agent-dashboard.js';
import { underPrefix } from './http/server.js';

/** Options of {@link agoraRouter}: the HTTP and streaming options, and the dashboard. */
export type RouterOptions = HttpOptions & StreamingOptions & {
  /**
   * `GET /dashboard` under the router's prefix: made for a `Receiver` by default (its tokens are `tokens`); pass one
   * from `createAgentDashboard` to close it yourself, or `false` for none.
   */
  dashboard?: AgentDashboard | false;
};

/**
 * An Express router serving a receiver's endpoints (spec §2) under any prefix, with or without `express.json()` before it.
 * Mount it before body parsers to have their errors (malformed JSON, their own size limit) answered as Agora JSON too.
 * @example app.use('/agora', agoraRouter(receiver));
 */
export function agoraRouter(receiver: ReceiverApi, options: RouterOptions = {}): Router {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const limit = rateLimitOf(options);
  const handle = createHandler(receiver, options, limit);
  // The faces' HTTP endpoints (the ROAR WebSocket needs the node:http server: `faces.attachWebSocket` there).
  const faces = facesFor(receiver, options.faces, {
    maxBodyBytes,
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.tokens ? { tokens: options.tokens } : {}),
    ...(limit ? { rateLimit: limit } : {}),
    ...(options.publicUrl !== undefined ? { publicUrl: options.publicUrl } : {}),
    ...(options.now ? { now: options.now } : {}),
  });
  const agora = agoraEnabled(options.faces);
  const dashboard =
    options.dashboard === false
      ? undefined
      : (options.dashboard ?? (receiver instanceof Receiver ? createAgentDashboard(receiver, { ...(options.tokens ? { tokens: options.tokens } : {}), ...(options.logger ? { logger: options.logger } : {}) }) : undefined));
  const router = express.Router();

  router.use((request: Request, response: Response, next: NextFunction) => {
    if (dashboard !== undefined && underPrefix(request.path, dashboard.prefix)) {
      (limit ? limit(request.ip ?? request.socket.remoteAddress) : Promise.resolve(0))
        .then((retryAfter) => {
          if (retryAfter <= 0) return dashboard.handle(request, response, request.url);
          response.writeHead(429, { 'content-type': 'application/json; charset=utf-8', 'retry-after': String(retryAfter) }).end('{"status":"failure","error":"Too many requests"}');
        })
        .catch(next);
      return;
    }
    const facePath = faces !== undefined && isFacePath(request.method, request.path);
    // Under a prefix the whole subtree is Agora's (JSON 404s); mounted at the root, other paths stay the host's.
    if (request.baseUrl === '' && !facePath && !isAgoraPath(request.path)) return next();
    const core: CoreRequest = {
      method: request.method,
      path: request.path,
      headers: request.headers,
      body: undefined,
      loadBody: () => loadBody(request, maxBodyBytes),
      remoteAddress: request.ip ?? request.socket.remoteAddress,
      baseUrl: `${request.protocol}://${request.get('host') ?? 'localhost'}${request.baseUrl}`,
    };
    (facePath ? faces.handle(core) : Promise.resolve(undefined))
      .then(async (faced) => {
        if (faced !== undefined) return writeFaceResponse(response, faced);
        if (!agora || (request.baseUrl === '' && !isAgoraPath(request.path))) return next();
        const result = await handle(core);
        if (result.stream) return writeEventStream(response, { ...result, stream: result.stream }, options);
        response.writeHead(result.status, result.headers).end(result.body);
      })
      .catch(next);
  });
  return router;
}

// A body parser that ran first (express.json() and kin) consumed the stream: serialize what it parsed.
function loadBody(request: Request, maxBodyBytes: number): Promise<Buffer> {
  const consumed = (request as Request & { _body?: boolean })._body === true || request.readableEnded;
  if (!consumed) return readBody(request, maxBodyBytes);
  const parsed: unknown = request.body;
  if (parsed === undefined) return Promise.resolve(Buffer.alloc(0));
  if (Buffer.isBuffer(parsed)) return Promise.resolve(parsed);
  if (typeof parsed === 'string') return Promise.resolve(Buffer.from(parsed));
  // The core checks size and depth again, so a host parser with laxer limits still gets our 413 or 400.
  try {
    return Promise.resolve(Buffer.from(JSON.stringify(parsed)));
  } catch {
    return Promise.reject(new AgoraError('BAD_REQUEST', 'Request body is nested too deeply'));
  }
}
