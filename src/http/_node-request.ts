// Internal: a `node:http` request as the HTTP core reads it: its target, the body with its size cap, and the
// client leaving.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AgoraError } from '../errors.js';
import type { CoreRequest } from './handler.js';

const EMPTY = Buffer.alloc(0);

/**
 * A request target (`incoming.url`) as a URL whose path and query can be read, or `undefined` when it has none
 * (answer 400). Never throws: a target is a stranger's bytes, and `new URL('//', base)` throws (it reads `//x` as a
 * host). An origin-form target is taken as a path, `//x` included; an absolute-form one as it is.
 */
export function requestTarget(target: string | undefined): URL | undefined {
  try {
    return new URL(target === undefined || target.startsWith('/') ? `http://target.invalid${target ?? '/'}` : target, 'http://target.invalid/');
  } catch {
    return undefined;
  }
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
  // Asked twice, the body is read once.
  const reading = (request as BodyReading)[READING];
  if (reading !== undefined) return reading.body;
  if (request.readableEnded) return Promise.resolve(EMPTY);
  const started = new Reading(maxBytes);
  (request as BodyReading)[READING] = started;
  request.on('data', onBodyData);
  request.on('end', onBodyEnd);
  request.on('close', onBodyClose);
  return started.body;
}

// The body being read, kept on the request itself: the three listeners are module functions (Node calls them with
// the request as `this`), not three closures made for every request.
const READING = Symbol('agora.bodyReading');
class Reading {
  readonly chunks: Buffer[] = [];
  size = 0;
  resolve!: (body: Buffer) => void;
  reject!: (error: Error) => void;
  readonly body: Promise<Buffer>;

  constructor(readonly maxBytes: number) {
    this.body = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
}
type BodyReading = IncomingMessage & { [READING]?: Reading };

function onBodyData(this: BodyReading, chunk: Buffer): void {
  const reading = this[READING]!;
  reading.size += chunk.length;
  if (reading.size > reading.maxBytes) {
    // Still flowing with no listener: the rest is read and dropped, so the client can read our 413 (clients such as
    // Python's requests send the whole body before reading); requestTimeout bounds it.
    this.off('data', onBodyData);
    reading.chunks.length = 0;
    reading.reject(new AgoraError('REQUEST_TOO_LARGE'));
    return;
  }
  reading.chunks.push(chunk);
}

function onBodyEnd(this: BodyReading): void {
  const { chunks, size, resolve } = this[READING]!;
  resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
}

// Listeners are never removed once the body is whole (each one added and removed showed on the hot path): the 'close'
// every request ends with does nothing after 'end' (an error made there for nothing would capture a stack each time).
// Before 'end', the client is gone: nobody reads the answer, and it is not an internal error worth logging. No 'error'
// listener: an IncomingMessage without one drops its error, and an aborted request still closes.
function onBodyClose(this: BodyReading): void {
  if (!this.readableEnded) this[READING]?.reject(new AgoraError('BAD_REQUEST', 'Request aborted by the client'));
}

/** A node request as the core sees it; one object per request, with its method on the prototype: no closures on the hot path. */
export class NodeCoreRequest implements CoreRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: undefined = undefined;
  readonly remoteAddress: string | undefined;
  signal: AbortSignal | undefined = undefined;
  id: string | undefined = undefined;

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

/** A signal aborted when the client goes away before the response is finished. */
export function disconnectSignal(response: ServerResponse): AbortSignal {
  const controller = new AbortController();
  if (response.closed) controller.abort();
  else response.once('close', () => response.writableFinished || controller.abort());
  return controller.signal;
}
