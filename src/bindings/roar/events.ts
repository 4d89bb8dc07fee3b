// ROAR's stream layer: the agent's task events (`task_update`) in ROAR's StreamEvent shape ({type, source,
// session_id, data, timestamp}), as Server-Sent Events on `GET /roar/events` and as WebSocket frames on
// `/roar/ws/stream` (what ROAR's SDK `ws_subscribe` reads). Statuses only: no peer's text goes out here.
import type { WebSocket } from 'ws';
import { sseFrame } from '../../edge/events.js';
import type { EventStream } from '../../edge/response.js';
import type { JsonValue } from '../../schemas.js';

/** One ROAR StreamEvent; `session_id` is `""` for a task of no session, as ROAR's SDK defaults it. */
export type RoarStreamEvent = {
  type: 'task_update';
  source: string;
  session_id: string;
  data: Record<string, JsonValue>;
  timestamp: number;
};

/** Bounds of the event feed. */
export type RoarEventOptions = {
  /** Listeners at once (default 64); one more is refused with 503. */
  maxSubscribers?: number;
  /** Events one listener may leave unread (default 256); beyond, it is dropped. */
  maxQueued?: number;
  /** A comment line this often while nothing happens, ms (default 15 000). */
  heartbeatMs?: number;
};

// A listener: an SSE reader's queue, or a socket (`send` set) written to at once.
type Subscriber = {
  session: string | undefined;
  queue: string[];
  wake: (() => void) | undefined;
  dropped: boolean;
  send?: (text: string) => boolean;
};

const DONE: IteratorResult<string> = { value: undefined, done: true };

/** The agent's ROAR events, fanned out to `GET /roar/events` listeners with bounded queues. */
export class RoarEvents {
  readonly #subscribers = new Set<Subscriber>();
  readonly #maxSubscribers: number;
  readonly #maxQueued: number;
  readonly #heartbeatMs: number;

  constructor(options: RoarEventOptions = {}) {
    this.#maxSubscribers = options.maxSubscribers ?? 64;
    this.#maxQueued = options.maxQueued ?? 256;
    this.#heartbeatMs = options.heartbeatMs ?? 15_000;
  }

  /** Listeners now. */
  get subscribers(): number {
    return this.#subscribers.size;
  }

  /** Sends an event to every listener of its session (or of all sessions); a listener too far behind is dropped. */
  publish(event: RoarStreamEvent): void {
    if (this.#subscribers.size === 0) return;
    const text = JSON.stringify(event);
    let frame: string | undefined;
    for (const subscriber of this.#subscribers) {
      if (subscriber.session !== undefined && subscriber.session !== event.session_id) continue;
      if (subscriber.send !== undefined) {
        if (!subscriber.send(text)) this.#subscribers.delete(subscriber);
        continue;
      }
      frame ??= sseFrame(event.type, text);
      if (subscriber.queue.length >= this.#maxQueued) subscriber.dropped = true;
      else subscriber.queue.push(frame);
      wake(subscriber);
    }
  }

  /**
   * Sends each event to a socket (`/roar/ws/stream`) until it closes; a socket with more than `maxQueued` events'
   * worth of unsent bytes is closed (1013). False when the listeners are at their cap (the socket is then closed).
   */
  attach(socket: WebSocket, session: string | undefined): boolean {
    if (this.#subscribers.size >= this.#maxSubscribers) {
      socket.close(1013, 'too many event listeners');
      return false;
    }
    const maxBuffered = this.#maxQueued * 1024;
    const subscriber: Subscriber = {
      session,
      queue: [],
      wake: undefined,
      dropped: false,
      send(text) {
        if (socket.readyState !== socket.OPEN) return false;
        if (socket.bufferedAmount > maxBuffered) {
          socket.close(1013, 'too far behind');
          return false;
        }
        socket.send(text);
        return true;
      },
    };
    this.#subscribers.add(subscriber);
    socket.once('close', () => this.#subscribers.delete(subscriber));
    return true;
  }

  /**
   * A listener's event stream (SSE frames), until it is cancelled or falls behind; undefined when the listeners are
   * at their cap. Its first frame is a comment, so the client knows at once that its stream is open.
   */
  subscribe(session: string | undefined): EventStream | undefined {
    if (this.#subscribers.size >= this.#maxSubscribers) return undefined;
    const subscriber: Subscriber = { session, queue: [': roar events\n\n'], wake: undefined, dropped: false };
    this.#subscribers.add(subscriber);
    const subscribers = this.#subscribers;
    const heartbeatMs = this.#heartbeatMs;
    const end = () => {
      subscriber.dropped = true;
      subscribers.delete(subscriber);
      wake(subscriber);
    };
    const next = async (): Promise<IteratorResult<string>> => {
      for (;;) {
        if (subscriber.dropped) {
          end();
          return DONE;
        }
        if (subscriber.queue.length > 0) return { value: subscriber.queue.splice(0).join(''), done: false };
        let timer: NodeJS.Timeout | undefined;
        const beat = await new Promise<boolean>((resolve) => {
          subscriber.wake = () => resolve(false);
          timer = setTimeout(() => resolve(true), heartbeatMs);
          timer.unref();
        });
        clearTimeout(timer);
        subscriber.wake = undefined;
        if (beat && !subscriber.dropped) return { value: ': ping\n\n', done: false };
      }
    };
    // A reader that goes away leaves at once, not at the next event or heartbeat.
    return { frames: { next, return: () => (end(), Promise.resolve(DONE)) }, cancel: end };
  }
}

function wake(subscriber: Subscriber): void {
  const resume = subscriber.wake;
  subscriber.wake = undefined;
  resume?.();
}
