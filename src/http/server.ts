import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { describeError } from '../errors.js';
import { consoleLogger } from '../log.js';
import { agoraEnabled, facesFor, isFacePath } from '../faces/mount.js';
import { writeFaceResponse } from '../faces/node.js';
import type { ReceiverApi } from '../receiver.js';
import { createHandler, DEFAULT_MAX_BODY_BYTES, requestId, type HttpOptions } from './handler.js';
import { disconnectSignal, NodeCoreRequest } from './_node-request.js';
import { rateLimitOf } from './_limits.js';
import { refuseUntakenUpgrade } from '../faces/_upgrade.js';
import { failure } from './_response.js';
import { onCheckExpectation, onClientError, onConnect } from './_node-refusals.js';
import { isStream, writeEventStream, type StreamingOptions, type StreamingResponse } from './streaming.js';
import { writeSoon, writeWhole, type BatchOwner, type WholeResponse } from './_write-batch.js';

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

  // Whole responses are written together after the event loop's turn (see _write-batch.ts). A request counts as in
  // flight until its response is written, so close() waits for the write.
  const owner: BatchOwner = {
    get closing() {
      return closing;
    },
    written(response, error) {
      if (error !== undefined) logger.error(`${response.req.method} ${response.req.url}: could not write the response: ${describeError(error)}`);
      settled();
    },
  };

  // An Agora request (the hot path) awaits in a small async function of its own: V8 allocates an async function's
  // whole register file each time it awaits, and the garbage is what slows a busy server down.
  async function serveAgora(incoming: IncomingMessage, response: ServerResponse, request: NodeCoreRequest): Promise<void> {
    let queued = false;
    try {
      const started = debug ? performance.now() : 0;
      if (debug) request.id = requestId();
      const result: StreamingResponse = agora ? await handle(request) : failure(404, 'Not found');
      if (debug) debug(`request ${request.id}: ${incoming.method} ${incoming.url} ${result.status} ${(performance.now() - started).toFixed(1)}ms`);
      if (isStream(result)) await writeStream(incoming, response, result);
      else queued = queue(response, result);
    } catch (error) {
      writeInternalError(incoming, response, error);
    } finally {
      if (!queued) settled();
    }
  }

  // The dashboard's routes and the faces; a face that does not take the request leaves it to Agora.
  async function serveMounted(incoming: IncomingMessage, response: ServerResponse, request: NodeCoreRequest): Promise<void> {
    // serveAgora counts itself out, and a queued response is counted out once written.
    let countedOut = false;
    try {
      if (routes !== undefined && underPrefix(request.path, routes.prefix)) {
        const retryAfter = limit ? await limit(request.remoteAddress) : 0;
        if (retryAfter <= 0) return await routes.handle(incoming, response, request.path);
        const refused = failure(429, 'Too many requests');
        refused.headers['retry-after'] = String(retryAfter);
        countedOut = queue(response, refused);
        return;
      }
      const faced = await faces!.handle(request);
      if (faced === undefined) {
        countedOut = true;
        return await serveAgora(incoming, response, request);
      }
      if (typeof faced.body === 'string') {
        countedOut = queue(response, faced as WholeResponse);
        return;
      }
      if (closing) response.shouldKeepAlive = false;
      await writeFaceResponse(response, faced);
    } catch (error) {
      writeInternalError(incoming, response, error);
    } finally {
      if (!countedOut) settled();
    }
  }

  // What went wrong stays in the log; the client gets a fixed text and the id that finds the log line. Written at
  // once, not queued: the caller counts the request out.
  function writeInternalError(incoming: IncomingMessage, response: ServerResponse, error: unknown): void {
    const id = requestId();
    logger.error(`request ${id}: ${incoming.method} ${incoming.url} failed: ${describeError(error)}`);
    writeWhole(response, failure(500, `Internal error (request ${id})`));
  }

  /** Queues a whole response (true), unless the response is gone already or was sent (false: nothing to wait for). */
  function queue(response: ServerResponse, result: WholeResponse): boolean {
    if (response.headersSent || response.destroyed) return false;
    writeSoon(response, result, owner);
    return true;
  }

  /** Writes a stream of events; streamed replies hold their connection until their last event. */
  function writeStream(incoming: IncomingMessage, response: ServerResponse, result: StreamingResponse & { stream: NonNullable<StreamingResponse['stream']> }): Promise<void> {
    // Never kept alive past a close().
    if (closing) response.shouldKeepAlive = false;
    return writeEventStream(response, result, options).catch((error: unknown) => {
      logger.error(`${incoming.method} ${incoming.url}: stream failed: ${describeError(error)}`);
      response.destroy();
    });
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
