// The edge as Express middleware: a thin adapter with no features of its own. Every mount, its guard and its error
// shapes are the edge's; this only turns Express's request into an `EdgeRequest` and writes the answer.
import type { NextFunction, Request, Response } from 'express';
import { AgoraError } from '../errors.js';
import { boundAddressOf, readBody } from './body.js';
import { writeEvents, type StreamingOptions } from './events.js';
import type { Edge } from './mount.js';
import type { EdgeRequest } from './request.js';

/** Where the edge's routes live when this middleware is not mounted there (a well-known route at the host's root). */
export type EdgeMiddlewareOptions = {
  /** The path the edge is mounted under (its links, as the A2A card's endpoint, are made under it); default: Express's mount path. */
  prefix?: string;
};

/**
 * Express middleware serving an edge under the prefix it is mounted at. Mounted at a host's root, paths no mount
 * claims go on to the host's own routes; under a prefix the whole subtree is the edge's (JSON 404s).
 * @example app.use('/agora', edgeMiddleware(compose([agoraMount(receiver)])));
 */
export function edgeMiddleware(
  edge: Edge,
  options: StreamingOptions & EdgeMiddlewareOptions = {},
): (request: Request, response: Response, next: NextFunction) => void {
  return (request, response, next) => {
    if (request.baseUrl === '' && !edge.claims(request.method, request.path)) return next();
    const edgeRequest: EdgeRequest = {
      method: request.method,
      // Relative to the mount point, with its query string.
      path: request.url,
      headers: request.headers,
      body: undefined,
      loadBody: () => loadBody(request, edge.maxBodyBytes),
      remoteAddress: request.ip ?? request.socket.remoteAddress,
      baseUrl: `${request.protocol}://${request.get('host') ?? 'localhost'}${options.prefix ?? request.baseUrl}`,
      boundAddress: boundAddressOf(request),
    };
    edge
      .handle(edgeRequest)
      .catch((error: unknown) => edge.failure(edgeRequest, error))
      .then((result) => {
        if (result.events !== undefined)
          return writeEvents(response, result.status, result.headers, result.events, options);
        response.writeHead(result.status, result.headers).end(result.body);
      })
      .catch(next);
  };
}

// A body parser that ran first (express.json() and kin) consumed the stream: serialize what it parsed.
function loadBody(request: Request, maxBodyBytes: number): Promise<Buffer> {
  const consumed = (request as Request & { _body?: boolean })._body === true || request.readableEnded;
  if (!consumed) return readBody(request, maxBodyBytes);
  const parsed: unknown = request.body;
  if (parsed === undefined) return Promise.resolve(Buffer.alloc(0));
  if (Buffer.isBuffer(parsed)) return Promise.resolve(parsed);
  if (typeof parsed === 'string') return Promise.resolve(Buffer.from(parsed));
  // The mounts check size and depth again, so a host parser with laxer limits still gets our 413 or 400.
  try {
    return Promise.resolve(Buffer.from(JSON.stringify(parsed)));
  } catch {
    return Promise.reject(new AgoraError('BAD_REQUEST', 'Request body is nested too deeply'));
  }
}
