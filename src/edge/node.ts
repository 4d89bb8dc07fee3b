// The edge on node:http: one server for every mount, whole responses written in batches, event streams with
// backpressure, upgrades through the socket router, a readable 413, and a graceful close.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { describeError } from '../errors.js';
import { consoleLogger, type Logger } from '../log.js';
import { agoraTracer, contextFrom, inContext, setSpan, spanFailed, SpanKind, TRACING } from '../telemetry/tracing.js';
import { disconnectSignal, NodeRequest } from './body.js';
import { writeEvents, type StreamingOptions } from './events.js';
import type { Edge, MountedRequest } from './mount.js';
import { requestId } from './request.js';
import { failure, type EdgeResponse, type EventStream } from './response.js';
import { onCheckExpectation, onClientError, onConnect } from './_refusals.js';
import { logRequest, pathOf } from './_request-log.js';
import { SocketRouter, type SocketLimits } from './sockets.js';
import { writeSoon, writeWhole, type BatchOwner } from './_write-batch.js';

/** Where and how the node server listens, and the slow-client bounds. */
export type ListenOptions = StreamingOptions &
  SocketLimits & {
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
    /** Give each request a `signal` aborted when the client disconnects (default false: it halved the hot path, measured). */
    abortOnDisconnect?: boolean;
    /** Where internal errors go (default: stderr); with `debug` or {@link ListenOptions.requestLog}, one record per request. */
    logger?: Pick<Logger, 'error' | 'warn'> & Partial<Pick<Logger, 'debug' | 'info'>>;
    /**
     * One `info` record per request: request id, method, path, status, ms, and from the Agora mount the protocol
     * hash and the path taken (`taken`: `routine`, `llm`, `failure`). Default false here; `agora serve` turns it on
     * (`--quiet-requests` turns it off). At `debug` requests are logged whatever this says.
     */
    requestLog?: boolean;
    /** Share of requests that get their record, from 0 to 1 (default 1: every one); errors are all logged. */
    requestLogSample?: number;
  };

/** A running server: its address and a graceful `close`. */
export type RunningServer = { server: Server; url: string; port: number; close(): Promise<void> };

// After a 413, the rest of the body is read and dropped (so the client, still sending, reads the answer instead of
// a reset) up to this many bytes or this long; then the connection is cut.
const LINGER_BYTES = 64 * 1024 * 1024;
const LINGER_MS = 10_000;

/** The URL a server listening on `host` and `port` is reached at from this machine. */
export function urlOf(host: string | undefined, port: number): string {
  const name = host === undefined || host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
  return `http://${name.includes(':') ? `[${name}]` : name}:${port}`;
}

/**
 * Serves an edge (its mounts behind its guard) on node:http.
 * @example const { url, close } = await listen(compose([agoraMount(receiver)]), { port: 0 });
 */
export async function listen(edge: Edge, options: ListenOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? consoleLogger();
  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  // Node refuses a headers timeout longer than the request timeout.
  const headersTimeout = Math.min(options.headersTimeoutMs ?? 10_000, requestTimeout > 0 ? requestTimeout : Infinity);
  const abortOnDisconnect = options.abortOnDisconnect === true;
  const maxBodyBytes = edge.maxBodyBytes;
  let closing = false;
  // Requests still being answered (their client may be gone): close() waits for them.
  let inFlight = 0;
  let drained: (() => void) | undefined;
  // Checked once: with the request log off (the library's default) a request pays nothing for it.
  const debug = logger.debug?.bind(logger);
  const info = options.requestLog === true && logger.info ? logger.info.bind(logger) : undefined;
  const recordRequest = info ?? debug;
  const sample = options.requestLogSample ?? 1;
  if (!(sample >= 0 && sample <= 1)) throw new RangeError(`requestLogSample must be from 0 to 1, got ${sample}`);

  function settled(): void {
    inFlight -= 1;
    if (inFlight === 0) drained?.();
  }

  // Whole responses are written together after the event loop's turn (see _write-batch.ts).
  const owner: BatchOwner = {
    get closing() {
      return closing;
    },
    written(response, error) {
      if (error !== undefined)
        logger.error(
          `${response.req.method} ${response.req.url}: could not write the response: ${describeError(error)}`,
        );
      settled();
    },
  };

  // A request awaits in a small async function of its own: V8 allocates an async function's whole register file each
  // time it awaits, and the garbage is what slows a busy server down.
  async function answer(incoming: IncomingMessage, response: ServerResponse, request: NodeRequest): Promise<void> {
    let queued = false;
    try {
      const record = sample >= 1 || Math.random() < sample ? recordRequest : undefined;
      const started = record ? performance.now() : 0;
      if (record) {
        request.id = requestId();
        request.log = {};
      }
      let result: EdgeResponse;
      try {
        result = await edge.handle(request);
      } catch (error) {
        // A mount's rejection, answered in its own shape (no `.catch` on the hot path: it allocates a promise a
        // request).
        result = edge.failure(request, error);
      }
      // A stream is logged when it ends: its protocol and path taken are known only once its answer has run.
      if (record && result.events === undefined)
        logRequest(record, incoming, request, result.status, performance.now() - started);
      if (result.status === 413) {
        // The connection is not kept for another request: the rest of an oversize body is not worth reading.
        result.headers.connection = 'close';
        linger(incoming);
      }
      if (result.events !== undefined) {
        try {
          await stream(incoming, response, result, result.events);
        } finally {
          if (record) logRequest(record, incoming, request, result.status, performance.now() - started);
        }
      } else queued = queue(response, result);
    } catch (error) {
      writeInternalError(incoming, response, error);
    } finally {
      if (!queued) settled();
    }
  }

  // What went wrong stays in the log; the client gets a fixed text and the id that finds the log line.
  function writeInternalError(incoming: IncomingMessage, response: ServerResponse, error: unknown): void {
    const id = requestId();
    logger.error(`request ${id}: ${incoming.method} ${incoming.url} failed: ${describeError(error)}`);
    writeWhole(response, failure(500, `Internal error (request ${id})`));
  }

  /** Queues a whole response (true), unless the response is gone already or was sent (false: nothing to wait for). */
  function queue(response: ServerResponse, result: EdgeResponse): boolean {
    if (response.headersSent || response.destroyed) return false;
    writeSoon(response, result, owner);
    return true;
  }

  function stream(
    incoming: IncomingMessage,
    response: ServerResponse,
    result: EdgeResponse,
    events: EventStream,
  ): Promise<void> {
    // Never kept alive past a close().
    if (closing) response.shouldKeepAlive = false;
    return writeEvents(response, result.status, result.headers, events, options).catch((error: unknown) => {
      logger.error(`${incoming.method} ${incoming.url}: stream failed: ${describeError(error)}`);
      response.destroy();
    });
  }

  function serve(incoming: IncomingMessage, response: ServerResponse): void {
    inFlight += 1;
    let request: NodeRequest;
    try {
      request = new NodeRequest(incoming, maxBodyBytes);
      if (abortOnDisconnect) request.signal = disconnectSignal(response);
    } catch (error) {
      // Thrown here it would reach Node's event emitter and end the process.
      writeInternalError(incoming, response, error);
      settled();
      return;
    }
    if (TRACING.on) answerTraced(incoming, response, request);
    else void answer(incoming, response, request);
  }

  // With tracing on, a request is a server span: the child of the trace context it carries (`traceparent`), the
  // parent of every span its answer opens (the current span across its awaits), ended when the response is done.
  function answerTraced(incoming: IncomingMessage, response: ServerResponse, request: NodeRequest): void {
    const parent = contextFrom(incoming.headers);
    const method = request.method;
    const span = agoraTracer().startSpan(
      method,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': method, 'url.path': pathOf(request.path), 'url.scheme': 'http' },
      },
      parent,
    );
    response.once('close', () => {
      const route = (request as MountedRequest).route;
      if (route) {
        const template = route.prefix ? `${route.path}/*` : route.path;
        span.setAttribute('http.route', template);
        span.updateName(`${method} ${template}`);
      }
      span.setAttribute('http.response.status_code', response.statusCode);
      if (response.statusCode >= 500) spanFailed(span, undefined, String(response.statusCode));
      span.end();
    });
    void inContext(setSpan(parent, span), () => answer(incoming, response, request));
  }

  const server = createServer(
    {
      requestTimeout,
      headersTimeout,
      // Node checks the two timeouts on this interval (30 s by default), far too coarse for a 10 s limit.
      connectionsCheckingInterval: Math.max(
        25,
        Math.min(1000, Math.floor(Math.min(headersTimeout, requestTimeout || Infinity) / 4)),
      ),
      // Liberal: a request without Host is answered (Node would send a bare 400 without a JSON body).
      requireHostHeader: false,
    },
    serve,
  );
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  server.on('clientError', onClientError);
  server.on('connect', onConnect);
  server.on('checkExpectation', onCheckExpectation);
  const sockets = new SocketRouter(edge, options);
  server.on('upgrade', sockets.upgrade);

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

  async function close(): Promise<void> {
    closing = true;
    sockets.close();
    await edge.close();
    const connections = new Promise<void>((resolve) => {
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
    await Promise.all([connections, requests]);
  }

  return { server, url: urlOf(options.host, port), port, close };
}

// Reads and drops the rest of a refused body, bounded, so the client reads its 413 rather than a reset: node would
// end the connection as soon as a `Connection: close` answer is written, while the client may still be sending
// (and a socket closed with unread bytes is reset). The close waits for the body's end, or the bound.
function linger(incoming: IncomingMessage): void {
  if (incoming.readableEnded) return;
  const socket = incoming.socket;
  let read = 0;
  const cut = () => socket.destroy();
  const timer = setTimeout(cut, LINGER_MS);
  timer.unref();
  const close = () => {
    clearTimeout(timer);
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
  };
  socket.destroySoon = () => {
    socket.end();
    if (incoming.readableEnded) close();
  };
  incoming.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > LINGER_BYTES) cut();
  });
  incoming.once('end', () => {
    if (socket.writableEnded) close();
  });
  incoming.once('close', () => clearTimeout(timer));
  incoming.resume();
}
