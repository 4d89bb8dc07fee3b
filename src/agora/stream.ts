// Streamed Agora replies: `POST /` and `POST /conversations/:id` with `Accept: text/event-stream`, and
// `GET /conversations/:id/events` to resume. Opened here as the edge's event streams; the edge writes them.
import { eventStream, failure, respond, SSE_HEADERS, type EdgeResponse, type EventStream } from '../edge/response.js';
import { sseFrame } from '../edge/events.js';
import type { EventChannel, ReplyEvent } from '../receiver.js';
import { agoraStatus } from './status.js';

/** One reply event in the SSE wire format. */
export function formatEvent(event: ReplyEvent): string {
  return sseFrame(event.type, event.data, event.id);
}

// The reply events of an iterator as SSE frames.
function framesOf(events: AsyncIterator<ReplyEvent>): AsyncIterator<string> {
  return {
    next: () =>
      events
        .next()
        .then((next) =>
          next.done ? { value: undefined, done: true } : { value: formatEvent(next.value), done: false },
        ),
  };
}

/**
 * The plain JSON answer of an error event that comes before anything was streamed and is no Agora-level failure
 * (those are 200 with their fixed text, sent as events as without streaming); undefined for any other event.
 */
function refusalOf(event: ReplyEvent): EdgeResponse | undefined {
  if (event.type !== 'error' || event.code === undefined) return undefined;
  const status = agoraStatus(event.code);
  return status === 200 ? undefined : failure(status, event.error);
}

/**
 * Opens a streamed reply once its turn began or its first event came: a failure before the turn began (unknown
 * conversation, bad request: any failure that is not an Agora-level 200) answers as plain JSON with its status, as
 * without streaming; from the turn's start the headers go out, so heartbeats cover a slow first token.
 */
export async function openReplyStream(events: EventChannel): Promise<EdgeResponse> {
  // A turn done within this turn of the event loop (a plain routine: no I/O) is answered whole, in one write, with a
  // length: no chunked encoding, no heartbeat, no wait on the socket. It is answered as soon as it ends, so its
  // response goes out with those of the same turn (see ../edge/_write-batch.ts); a turn still going is streamed.
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
    const refused = head && refusalOf(head);
    if (refused !== undefined) return refused;
    return wholeStream(all, events);
  }
  const first = events.next();
  const opened = await Promise.race([first, events.started.then(() => undefined)]);
  const refused = opened && !opened.done ? refusalOf(opened.value) : undefined;
  if (refused !== undefined) {
    await events.return();
    return refused;
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
  return eventStream({ frames: framesOf(iterator), cancel: () => void events.return() });
}

/** Bytes of events a finished turn may answer in one write; beyond, they are streamed (a slow reader's bound holds). */
const WHOLE_MAX_BYTES = 64 * 1024;

/** The events of a finished channel as one SSE response body, or streamed when they are many. */
function wholeStream(all: ReplyEvent[], events: EventChannel): EdgeResponse {
  let body = '';
  for (let index = 0; index < all.length; index++) {
    body += formatEvent(all[index]!);
    if (body.length > WHOLE_MAX_BYTES) {
      let next = 0;
      const frames: AsyncIterator<string> = {
        next: () =>
          Promise.resolve(
            next < all.length ? { value: formatEvent(all[next++]!), done: false } : { value: undefined, done: true },
          ),
      };
      return eventStream({ frames, cancel: () => void events.return() });
    }
  }
  const response = respond(200, SSE_HEADERS['content-type']!, body);
  Object.assign(response.headers, SSE_HEADERS);
  return response;
}

/** A stream of resumed events; `controller` is the one whose signal the resumption was opened with. */
export function resumedStream(events: AsyncIterable<ReplyEvent>, controller: AbortController): EdgeResponse {
  const iterator = events[Symbol.asyncIterator]();
  const stream: EventStream = {
    frames: framesOf(iterator),
    cancel: () => {
      controller.abort();
      void iterator.return?.();
    },
  };
  return eventStream(stream);
}
