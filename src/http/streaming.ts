// Server-Sent Events: replies streamed on `POST /` and `POST /conversations/:id` (with `Accept: text/event-stream`)
// and resumed on `GET /conversations/:id/events`. The core opens the stream; adapters write it with `writeEventStream`.
import type { ServerResponse } from 'node:http';
import { AgoraError } from '../errors.js';
import type { EventChannel, ReplyEvent } from '../receiver.js';
import { failure, type CoreResponse } from './_response.js';

/** How a stream is written: heartbeats for proxies, and the bound on what a slow reader may leave buffered. */
export type StreamingOptions = {
  /** A comment line (`: ping`) this often while a stream is open, ms (default 15 000; 0: none). */
  heartbeatMs?: number;
  /** Bytes a stream may leave unread in its connection's buffers; beyond, the connection is dropped (default 1 MiB). */
  maxBufferedBytes?: number;
  /** Called when a stream's reader is too slow and its connection is dropped (events stay kept for resumption). */
  onDrop?: (bufferedBytes: number) => void;
};

/** An opened stream, as the core hands it to an adapter: its events, and how to stop it when the client goes. */
export type EventStream = {
  events: AsyncIterator<ReplyEvent>;
  /** Stops the stream: a single-round turn is aborted, a resumption stops waiting; a conversation's turn runs on. */
  cancel(): void;
};

/** A core response that is a stream (`stream` set) or an ordinary one. */
export type StreamingResponse = CoreResponse & { stream?: EventStream };

/** Whether a core response is a stream. */
export function isStream(response: StreamingResponse): response is StreamingResponse & { stream: EventStream } {
  return response.stream !== undefined;
}

/** Default bound on a slow reader's unread bytes. */
export const DEFAULT_MAX_BUFFERED_BYTES = 1024 * 1024;

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  // nginx would otherwise buffer the whole stream.
  'x-accel-buffering': 'no',
};

const LAST_EVENT_ID = /^\d{1,15}$/;

/** Whether a request asks for a stream (`Accept: text/event-stream`). */
export function wantsEventStream(accept: string | string[] | undefined): boolean {
  if (accept === undefined) return false;
  return (Array.isArray(accept) ? accept.join(',') : accept).includes('text/event-stream');
}

/** The `Last-Event-ID` header as an event id; BAD_REQUEST when it is not one. */
export function parseLastEventId(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') return undefined;
  if (!LAST_EVENT_ID.test(value.trim())) throw new AgoraError('BAD_REQUEST', 'Last-Event-ID must be an event id (a non-negative integer)');
  return Number(value.trim());
}

/**
 * Opens a streamed reply once its turn began or its first event came: a failure before the turn began (unknown
 * conversation, bad request: any failure that is not an Agora-level 200) answers as plain JSON with its status, as
 * without streaming; from the turn's start the headers go out, so heartbeats cover a slow first token.
 */
export async function openReplyStream(events: EventChannel): Promise<StreamingResponse> {
  // A turn done within this turn of the event loop (a plain routine: no I/O) is answered whole, in one write, with a
  // length: no chunked encoding, no heartbeat, no wait on the socket. It is answered as soon as it ends, so its
  // response goes out with those of the same turn (see ../http/_write-batch.ts); a turn still going at the end of
  // this one is streamed.
  if (!events.finished) {
    await new Promise<void>((resolve) => {
      const later = setImmediate(resolve);
      events.onEnd(() => {
        clearImmediate(later);
        resolve();
      });
    });
  }
  if (events.finished) {
    const all = events.drain();
    const head = all[0];
    if (head !== undefined && head.type === 'error' && head.status !== 200) return failure(head.status, head.error);
    return wholeStream(all, events);
  }
  const first = events.next();
  const opened = await Promise.race([first, events.started.then(() => undefined)]);
  if (opened && !opened.done && opened.value.type === 'error' && opened.value.status !== 200) {
    await events.return();
    return failure(opened.value.status, opened.value.error);
  }
  let pending: Promise<IteratorResult<ReplyEvent>> | undefined = first;
  const iterator: AsyncIterator<ReplyEvent> = {
    next: () => {
      if (pending === undefined) return events.next();
      const result = pending;
      pending = undefined;
      return result;
    },
  };
  return { status: 200, headers: { ...SSE_HEADERS }, body: '', stream: { events: iterator, cancel: () => void events.return() } };
}

/** Bytes of events a finished turn may answer in one write; beyond, they are streamed (a slow reader's bound holds). */
const WHOLE_MAX_BYTES = 64 * 1024;

/** The events of a finished channel as one SSE response body, or streamed when they are many. */
function wholeStream(all: ReplyEvent[], events: EventChannel): StreamingResponse {
  let body = '';
  for (let index = 0; index < all.length; index++) {
    body += formatEvent(all[index]!);
    if (body.length > WHOLE_MAX_BYTES) {
      let next = 0;
      const iterator: AsyncIterator<ReplyEvent> = {
        next: () => Promise.resolve(next < all.length ? { value: all[next++]!, done: false } : { value: undefined, done: true }),
      };
      return { status: 200, headers: { ...SSE_HEADERS }, body: '', stream: { events: iterator, cancel: () => void events.return() } };
    }
  }
  return { status: 200, headers: { ...SSE_HEADERS, 'content-length': String(Buffer.byteLength(body)) }, body };
}

/** A stream of resumed events; `controller` is the one whose signal the resumption was opened with. */
export function resumedStream(events: AsyncIterable<ReplyEvent>, controller: AbortController): StreamingResponse {
  const iterator = events[Symbol.asyncIterator]();
  const cancel = () => {
    controller.abort();
    void iterator.return?.();
  };
  return { status: 200, headers: { ...SSE_HEADERS }, body: '', stream: { events: iterator, cancel } };
}

/** One event in the SSE wire format (our data is JSON: one line). */
export function formatEvent(event: ReplyEvent): string {
  return `${event.id === undefined ? '' : `id: ${event.id}\n`}event: ${event.type}\ndata: ${event.data}\n\n`;
}

/**
 * Writes an opened stream to a node response (node:http or Express): headers, each event as it comes, heartbeats,
 * then the end after `done` or `error`. A reader leaving more than `maxBufferedBytes` unread loses its connection;
 * a client that goes away cancels the stream.
 */
export async function writeEventStream(response: ServerResponse, result: StreamingResponse & { stream: EventStream }, options: StreamingOptions = {}): Promise<void> {
  const { stream } = result;
  const maxBuffered = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  let closed = false;
  const onClose = () => {
    if (closed) return;
    closed = true;
    stream.cancel();
  };
  if (response.destroyed) return onClose();
  response.once('close', onClose);
  response.writeHead(result.status, result.headers);
  // Headers go out now: the client learns at once that its stream is open.
  response.flushHeaders();
  const heartbeat = heartbeatMs > 0 ? setInterval(() => response.write(': ping\n\n'), heartbeatMs) : undefined;
  heartbeat?.unref();
  try {
    for (;;) {
      const next = await stream.events.next();
      if (next.done || closed) break;
      if (!response.write(formatEvent(next.value)) && response.writableLength > maxBuffered) {
        options.onDrop?.(response.writableLength);
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
