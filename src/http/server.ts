import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { describeError } from '../errors.js';
import { consoleLogger } from '../log.js';
import { agoraEnabled, facesFor, isFacePath } from '../faces/mount.js';
import { writeFaceResponse } from '../faces/node.js';
import type { ReceiverApi } from '../receiver.js';
import { createHandler, DEFAULT_MAX_BODY_BYTES, requestId, type HttpOptions } from './handler.js';
import { disconnectSignal, NodeCoreRequest } from './_node-request.js';
import { rateLimitOf } from './_limits.js';
import { refuseUntakenUpgrade } from '../faces/_upgrade.js';
import { failure, JSON_TYPE } from './_response.js';
import { writeEventStream, type StreamingOptions, type StreamingResponse } from './streaming.js';

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

/**
 * Routes served beside Agora's on the same server, under one path prefix (the dashboard): a node handler that
 * answers the whole request itself (it may stream), and what to stop when the server closes.
 */
export type ExtraRoutes = {
  /** e.g. `/dashboard`: the prefix itself, and paths under `prefix/`, go to `handle`. */
  prefix: string;
  /** Answers the request; `path` is its mount-relative URL (query string included). */
  handle(incoming: IncomingMessage, response: ServerResponse, path: string): Promise<void>;
  /** Ends long-lived responses and timers (called first by `close()`). */
  close?(): void;
};

/** Whether a mount-relative URL falls under a routes prefix. */
export function underPrefix(path: string, prefix: string): boolean {
  if (!path.startsWith(prefix)) return false;
  const next = path.charCodeAt(prefix.length);
  // End of path, `/`, or `?`.
  return Number.isNaN(next) || next === 47 || next === 63;
}

/** Options of `startServer`: the HTTP options plus where to listen and the slow-client timeouts. */
export type ServerOptions = HttpOptions & StreamingOptions & {
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
  /** Routes served beside Agora's (the dashboard, see `createAgentDashboard`), behind the same rate limit. */
  routes?: ExtraRoutes;
};

/** A running server: its address and a graceful `close`. */
export type RunningServer = { server: Server; url: string; port: number; close(): Promise<void> };

/**
 * Serves a receiver on node:http.
 * @example const { url, close } = await startServer(receiver, { port: 0 });
 */
export async function startServer(receiver: ReceiverApi, options: ServerOptions = {}): Promise<RunningServer> {
  const logger: NonNullable<HttpOptions['logger']> = options.logger ?? consoleLogger();
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  // One rate limit, one token list and one body cap for the Agora routes and the faces.
  const limit = rateLimitOf(options);
  const handle = createHandler(receiver, options, limit);
  const faces = facesFor(receiver, options.faces, {
    maxBodyBytes,
    logger,
    ...(options.tokens ? { tokens: options.tokens } : {}),
    ...(limit ? { rateLimit: limit } : {}),
    ...(options.publicUrl !== undefined ? { publicUrl: options.publicUrl } : {}),
    ...(options.now ? { now: options.now } : {}),
  });
  const agora = agoraEnabled(options.faces);
  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  // Node refuses a headers timeout longer than the request timeout.
  const headersTimeout = Math.min(options.headersTimeoutMs ?? 10_000, requestTimeout > 0 ? requestTimeout : Infinity);
  const abortOnDisconnect = options.abortOnDisconnect === true;
  const routes = options.routes;
  let closing = false;

  // Requests still being answered (their client may be gone): close() waits for them before the caller closes
  // the receiver and its store under their feet.
  let inFlight = 0;
  let drained: (() => void) | undefined;

  // Checked once: with debug off (the default) a request pays nothing for the request log.
  const debug = logger.debug?.bind(logger);

  // A request counts in flight from its first byte to its answer written: close() waits for them all.
  function settled(): void {
    inFlight -= 1;
    if (inFlight === 0) drained?.();
  }

  // An Agora request (the hot path) awaits in a small async function of its own: V8 allocates an async function's
  // whole register file each time it awaits, and the garbage is what slows a busy server down.
  async function serveAgora(incoming: IncomingMessage, response: ServerResponse, request: NodeCoreRequest): Promise<void> {
    try {
      const started = debug ? performance.now() : 0;
      if (debug) request.id = requestId();
      const streamed = write(incoming, response, agora ? await handle(request) : failure(404, 'Not found'), started, request.id);
      if (streamed) await streamed;
    } catch (error) {
      writeInternalError(incoming, response, error);
    } finally {
      settled();
    }
  }

  // The dashboard's routes and the faces; a face that does not take the request leaves it to Agora.
  async function serveMounted(incoming: IncomingMessage, response: ServerResponse, request: NodeCoreRequest): Promise<void> {
    let toAgora = false;
    try {
      if (routes !== undefined && underPrefix(request.path, routes.prefix)) {
        const retryAfter = limit ? await limit(request.remoteAddress) : 0;
        if (retryAfter <= 0) return await routes.handle(incoming, response, request.path);
        const refused = failure(429, 'Too many requests');
        refused.headers['retry-after'] = String(retryAfter);
        response.writeHead(refused.status, refused.headers).end(refused.body);
        return;
      }
      const faced = await faces!.handle(request);
      if (faced === undefined) {
        toAgora = true;
        return await serveAgora(incoming, response, request);
      }
      if (closing) response.shouldKeepAlive = false;
      // A whole body is written at once: only a stream is waited on.
      const streaming = writeFaceResponse(response, faced);
      if (streaming) await streaming;
    } catch (error) {
      writeInternalError(incoming, response, error);
    } finally {
      // serveAgora counts itself out.
      if (!toAgora) settled();
    }
  }

  // What went wrong stays in the log; the client gets a fixed text and the id that finds the log line.
  function writeInternalError(incoming: IncomingMessage, response: ServerResponse, error: unknown): void {
    const id = requestId();
    logger.error(`request ${id}: ${incoming.method} ${incoming.url} failed: ${describeError(error)}`);
    write(incoming, response, failure(500, `Internal error (request ${id})`), 0, undefined);
  }

  /** Writes a result; a stream's promise is returned, to be awaited by the request's function. */
  function write(incoming: IncomingMessage, response: ServerResponse, result: StreamingResponse, started: number, id: string | undefined): Promise<void> | undefined {
    if (result.stream) {
      // Streamed replies hold their connection until their last event: never kept alive past a close().
      if (closing) response.shouldKeepAlive = false;
      return writeEventStream(response, { ...result, stream: result.stream }, options).catch((error: unknown) => {
        logger.error(`${incoming.method} ${incoming.url}: stream failed: ${describeError(error)}`);
        response.destroy();
      });
    }
    if (response.headersSent || response.destroyed) return undefined;
    // While closing, no connection is kept alive, so close() does not wait on idle sockets.
    if (closing) response.shouldKeepAlive = false;
    try {
      response.writeHead(result.status, result.headers).end(result.body);
      if (debug) debug(`request ${id}: ${incoming.method} ${incoming.url} ${result.status} ${(performance.now() - started).toFixed(1)}ms`);
    } catch (error) {
      // A throw here would be unhandled and end the process: log, and drop this one connection.
      logger.error(`${incoming.method} ${incoming.url}: could not write the response: ${describeError(error)}`);
      response.destroy();
    }
    return undefined;
  }

  function serve(incoming: IncomingMessage, response: ServerResponse): void {
    inFlight += 1;
    let request: NodeCoreRequest;
    try {
      request = new NodeCoreRequest(incoming, maxBodyBytes);
      if (abortOnDisconnect) request.signal = disconnectSignal(response);
    } catch (error) {
      // Thrown here it would reach Node's event emitter and end the process.
      writeInternalError(incoming, response, error);
      settled();
      return;
    }
    // Faces first (OAP's `GET /` would be Agora's 405), behind a test of the path's first characters.
    if ((routes !== undefined && underPrefix(request.path, routes.prefix)) || (faces !== undefined && isFacePath(request.method, request.path))) {
      void serveMounted(incoming, response, request);
    } else void serveAgora(incoming, response, request);
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
    serve,
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

  const stopSockets = faces?.attachWebSocket(server);
  server.on('upgrade', refuseUntakenUpgrade);

  async function close(): Promise<void> {
    closing = true;
    routes?.close?.();
    await stopSockets?.();
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
    await Promise.all([sockets, requests]);
  }

  return { server, url, port, close };
}
