// The one body reader: a node request's body with its size cap (counted after decompression), a JSON body's
// nesting cap, a body parsed through a zod schema into an `AgoraError`, and a node request as the edge's `EdgeRequest`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import { createBrotliDecompress, createGunzip, createInflate, type Gunzip } from 'node:zlib';
import { z } from 'zod';
import { AgoraError } from '../errors.js';
import { refuseDeepNesting } from '../schemas.js';
import { bodyOf, type EdgeRequest, type RequestLogFields } from './request.js';

const EMPTY = Buffer.alloc(0);

/**
 * Reads a node request body with a size cap: a too-large Content-Length is refused before reading, and a stream
 * that passes the cap stops being buffered (the rest is discarded) and rejects with `REQUEST_TOO_LARGE`.
 */
export function readBody(request: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const encoding = request.headers['content-encoding'];
  if (encoding !== undefined && encoding !== '' && encoding !== 'identity')
    return readEncoded(request, encoding, maxBytes);
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

/**
 * A compressed body (`gzip`, `deflate`, `br`), decompressed as it comes: the cap counts the decompressed bytes, so a
 * small bomb stops at the cap. Another encoding is refused (415 by its code's status).
 */
function readEncoded(request: IncomingMessage, encoding: string, maxBytes: number): Promise<Buffer> {
  const name = encoding.trim().toLowerCase();
  const inflater: Gunzip | undefined =
    name === 'gzip' || name === 'x-gzip'
      ? createGunzip()
      : name === 'deflate'
        ? createInflate()
        : name === 'br'
          ? (createBrotliDecompress() as unknown as Gunzip)
          : undefined;
  if (inflater === undefined)
    return Promise.reject(
      new AgoraError(
        'BAD_REQUEST',
        `Unsupported Content-Encoding ${JSON.stringify(encoding.slice(0, 20))} (gzip, deflate, br)`,
      ),
    );
  // Compressed bytes are capped too (a stream of nothing but padding would never decompress past the cap).
  const declared = Number(request.headers['content-length']);
  if (declared > maxBytes) return Promise.reject(new AgoraError('REQUEST_TOO_LARGE'));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const fail = (error: Error) => {
      if (done) return;
      done = true;
      request.unpipe(inflater);
      inflater.destroy();
      // The rest of the request is read and dropped, so the client can read the answer.
      request.resume();
      reject(error);
    };
    inflater.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return fail(new AgoraError('REQUEST_TOO_LARGE'));
      chunks.push(chunk);
    });
    inflater.on('error', () => fail(new AgoraError('BAD_REQUEST', `Request body is not valid ${name}`)));
    inflater.on('end', () => {
      if (done) return;
      done = true;
      resolve(Buffer.concat(chunks, size));
    });
    request.on('close', () => {
      if (!request.readableEnded) fail(new AgoraError('BAD_REQUEST', 'Request aborted by the client'));
    });
    request.pipe(inflater);
  });
}

/**
 * The body of a request that carries JSON, read for every mount that reads one (the faces, the hub): given or
 * loaded (size-capped: past `maxBytes` too, `AgoraError('REQUEST_TOO_LARGE')`), and refused with
 * `AgoraError('BAD_REQUEST')` when nested deeper than the cap (100 levels), so no parse or walk of it can overflow
 * the stack. Each mount answers the refusal in its own wire's shape.
 */
export async function jsonBodyOf(request: EdgeRequest, maxBytes = Number.POSITIVE_INFINITY): Promise<Buffer> {
  const body = await bodyOf(request);
  if (body.length > maxBytes) throw new AgoraError('REQUEST_TOO_LARGE');
  refuseDeepNesting(body);
  return body;
}

/**
 * A body read (given or loaded, capped) and parsed as JSON through a schema: a body that is not JSON, nested too
 * deeply, or does not match, is `AgoraError('BAD_REQUEST')` with a readable reason (never a raw ZodError).
 */
export async function readJson<T>(request: EdgeRequest, schema: z.ZodType<T>): Promise<T> {
  const raw = await jsonBodyOf(request);
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new AgoraError('BAD_REQUEST', 'Request body must be JSON');
  }
  const result = schema.safeParse(value);
  if (!result.success) throw new AgoraError('BAD_REQUEST', `Bad request: ${z.prettifyError(result.error)}`);
  return result.data;
}

/** A node request as the edge sees it; one object per request, with its method on the prototype: no closures on the hot path. */
export class NodeRequest implements EdgeRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: undefined = undefined;
  readonly remoteAddress: string | undefined;
  signal: AbortSignal | undefined = undefined;
  id: string | undefined = undefined;
  log: RequestLogFields | undefined = undefined;
  principal: string | undefined = undefined;
  grants: ReadonlySet<'read' | 'query' | 'admin'> | undefined = undefined;

  constructor(
    private readonly incoming: IncomingMessage,
    /** The cap this request is read with: the edge's, or its mount's when smaller. */
    public maxBodyBytes: number,
  ) {
    this.method = incoming.method ?? 'GET';
    this.path = incoming.url ?? '/';
    this.headers = incoming.headers;
    this.remoteAddress = incoming.socket.remoteAddress;
  }

  loadBody(): Promise<Buffer> {
    return readBody(this.incoming, this.maxBodyBytes);
  }

  /** The address its server listens on, read when asked (a getter: the hot path never pays for it). */
  get boundAddress(): string | undefined {
    return boundAddressOf(this.incoming);
  }
}

/** The address the server that took a node request listens on, else the address the request came in on. */
export function boundAddressOf(incoming: IncomingMessage): string | undefined {
  const address = (incoming.socket as { server?: Server }).server?.address();
  if (typeof address === 'string') return address;
  return (address as AddressInfo | null | undefined)?.address ?? incoming.socket.localAddress;
}

/** A signal aborted when the client goes away before the response is finished. */
export function disconnectSignal(response: ServerResponse): AbortSignal {
  const controller = new AbortController();
  if (response.closed) controller.abort();
  else response.once('close', () => response.writableFinished || controller.abort());
  return controller.signal;
}
