// The one Server-Sent Events writer, and the one way to feed it from a source that pushes (a dashboard's live state):
// heartbeats for proxies, `Last-Event-ID` read one way, and backpressure: a reader that stays far behind is dropped,
// while a replay to a reader that reads waits for the socket to drain instead of tripping the drop.
import type { ServerResponse } from 'node:http';
import { AgoraError } from '../errors.js';
import type { EventStream } from './response.js';

/** How streams are written: heartbeats, and the bound on what a slow reader may leave unread. */
export type StreamingOptions = {
  /** A comment line (`: ping`) this often while a stream is open, ms (default 15 000; 0: none). */
  heartbeatMs?: number;
  /** Bytes a stream may leave unread in its connection's buffers before the writer waits for them (default 1 MiB). */
  maxBufferedBytes?: number;
  /** How long the writer waits for a reader over that bound to catch up before dropping it, ms (default 5 000). */
  stallMs?: number;
  /** Called when a reader is dropped for being too slow (a stream's events stay kept where they can be resumed). */
  onDrop?: (bufferedBytes: number) => void;
};

/** Default bound on a slow reader's unread bytes: 1 MiB. */
export const DEFAULT_MAX_BUFFERED_BYTES = 1024 * 1024;

const LAST_EVENT_ID = /^\d{1,15}$/;

/** One event in the SSE wire format; `data` is one line (JSON holds no raw newline). */
export function sseFrame(event: string, data: string, id?: number | string): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${data}\n\n`;
}

/** Whether a request asks for a stream (`Accept: text/event-stream`). */
export function wantsEventStream(accept: string | string[] | undefined): boolean {
  if (accept === undefined) return false;
  return (Array.isArray(accept) ? accept.join(',') : accept).includes('text/event-stream');
}

/** The `Last-Event-ID` header (or a query's `lastEventId`) as an event id; BAD_REQUEST when it is not one. */
export function parseLastEventId(header: string | string[] | null | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value === null || value.trim() === '') return undefined;
  if (!LAST_EVENT_ID.test(value.trim()))
    throw new AgoraError('BAD_REQUEST', 'Last-Event-ID must be an event id (a non-negative integer)');
  return Number(value.trim());
}

/** Resolves true once a response drained, false when it did not within `ms` or was closed. */
function drained(response: ServerResponse, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (value: boolean) => {
      clearTimeout(timer);
      response.off('drain', onDrain);
      response.off('close', onClose);
      resolve(value);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    const timer = setTimeout(() => done(false), ms);
    response.on('drain', onDrain);
    response.on('close', onClose);
  });
}

/**
 * Writes an event stream to a node response: headers, each frame as it comes, heartbeats, then the end. A reader
 * more than `maxBufferedBytes` behind is waited for (a replay's burst); one that does not catch up within `stallMs`
 * loses its connection. A client that goes away cancels the stream.
 */
export async function writeEvents(
  response: ServerResponse,
  status: number,
  headers: Record<string, string>,
  stream: EventStream,
  options: StreamingOptions = {},
): Promise<void> {
  const maxBuffered = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  const stallMs = options.stallMs ?? 5000;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  let closed = false;
  const onClose = () => {
    if (closed) return;
    closed = true;
    stream.cancel();
  };
  if (response.destroyed) return onClose();
  response.once('close', onClose);
  response.writeHead(status, headers);
  // Headers go out now: the client learns at once that its stream is open.
  response.flushHeaders();
  // A heartbeat is skipped for a reader already behind: it would only add to what it has not read.
  const heartbeat =
    heartbeatMs > 0
      ? setInterval(() => response.writableLength <= maxBuffered && response.write(': ping\n\n'), heartbeatMs)
      : undefined;
  heartbeat?.unref();
  try {
    for (;;) {
      const next = await stream.frames.next();
      if (next.done || closed) break;
      if (!response.write(next.value) && response.writableLength > maxBuffered && !(await drained(response, stallMs))) {
        if (!closed) options.onDrop?.(response.writableLength);
        response.destroy();
        break;
      }
    }
  } finally {
    if (heartbeat) clearInterval(heartbeat);
    if (!closed && !response.destroyed) response.end();
    // After our own end, 'close' means nothing to cancel.
    response.off('close', onClose);
    if (!closed && response.destroyed) onClose();
  }
}

/**
 * A stream fed by pushes (`send`), for sources that do not wait for their readers: what the reader has not taken
 * is queued up to `maxQueuedBytes` (one frame is always taken, however large); past that the reader is too far
 * behind and its stream ends (it reconnects).
 */
export class FeedChannel implements EventStream {
  readonly #queue: string[] = [];
  #queued = 0;
  #wake: ((result: IteratorResult<string>) => void) | undefined;
  #ended = false;
  readonly frames: AsyncIterator<string> = { next: () => this.#next() };

  constructor(
    private readonly maxQueuedBytes = DEFAULT_MAX_BUFFERED_BYTES,
    private readonly onEnd: () => void = () => {},
  ) {}

  /** Whether the feed has ended (cancelled, closed, or dropped for lagging). */
  get ended(): boolean {
    return this.#ended;
  }

  /** Queues a frame for the reader; ends the feed when the reader is too far behind. */
  send(frame: string): void {
    if (this.#ended) return;
    const wake = this.#wake;
    if (wake !== undefined) {
      this.#wake = undefined;
      return wake({ value: frame, done: false });
    }
    // A frame alone is always taken (a dashboard's whole state may be larger than the bound); behind others, the bound
    // holds.
    if (this.#queue.length > 0 && this.#queued + frame.length > this.maxQueuedBytes) return this.cancel();
    this.#queued += frame.length;
    this.#queue.push(frame);
  }

  /** Ends the feed: the reader gets what was queued, then the end. */
  cancel(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#queue.length = 0;
    this.#queued = 0;
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.({ value: undefined, done: true });
    this.onEnd();
  }

  #next(): Promise<IteratorResult<string>> {
    const frame = this.#queue.shift();
    if (frame !== undefined) {
      this.#queued -= frame.length;
      return Promise.resolve({ value: frame, done: false });
    }
    if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => (this.#wake = resolve));
  }
}
