// The events of a streamed reply, and the queue they go through, read by the wire as an async iterator.
import type { AgoraErrorCode } from '../errors.js';
import type { JsonValue, SuccessResponse } from '../schemas.js';

/**
 * One event of a streamed reply: pieces of the reply (`delta`), then exactly one `done` (the whole reply, as the
 * same request answers without streaming) or `error`. `data` is the event's JSON as sent on the wire; `id` increases
 * within a conversation and never repeats (absent when the event could not be kept).
 */
export type ReplyEvent = { id?: number; data: string } & (
  | { type: 'delta'; delta: JsonValue }
  | { type: 'done'; reply: SuccessResponse }
  /**
   * `code` is the failure's, so the wire it is sent on can answer it as a refusal when nothing was streamed before it;
   * absent for an event read back from the log (its turn had begun).
   */
  | { type: 'error'; error: string; code?: AgoraErrorCode }
);

/** A queue of events read as an async iterator; `return()` works at once, even while a `next()` waits. */
export class EventChannel implements AsyncIterableIterator<ReplyEvent> {
  #queue: ReplyEvent[] = [];
  #waiting: ((result: IteratorResult<ReplyEvent>) => void) | undefined;
  #ended = false;
  #closed = false;
  #hasStarted = false;
  #started: Promise<void> | undefined;
  #markStarted: (() => void) | undefined;
  #onEnd: (() => void) | undefined;
  /** Called once when the consumer stops early. */
  onCancel: (() => void) | undefined;

  /**
   * Resolves when the turn begins (the request was valid: its conversation found, its protocol served). Made when
   * first asked for: a turn answered whole never needs it.
   */
  get started(): Promise<void> {
    if (this.#started === undefined) {
      if (this.#hasStarted) this.#started = Promise.resolve();
      else this.#started = new Promise<void>((resolve) => (this.#markStarted = resolve));
    }
    return this.#started;
  }

  /** The turn began. */
  markStarted(): void {
    this.#hasStarted = true;
    this.#markStarted?.();
  }

  /** Queues an event (dropped once the consumer stopped). */
  push(event: ReplyEvent): void {
    if (this.#closed) return;
    if (this.#waiting) {
      const wake = this.#waiting;
      this.#waiting = undefined;
      wake({ value: event, done: false });
    } else this.#queue.push(event);
  }

  /**
   * Calls `callback` once when the channel ends (at once if it has; one callback, a later one replaces it): see
   * openReplyStream.
   */
  onEnd(callback: () => void): void {
    if (this.#ended) callback();
    else this.#onEnd = callback;
  }

  /** No more events. */
  end(): void {
    const onEnd = this.#onEnd;
    this.#onEnd = undefined;
    this.#ended = true;
    onEnd?.();
    if (this.#waiting) {
      const wake = this.#waiting;
      this.#waiting = undefined;
      wake({ value: undefined, done: true });
    }
  }

  /** Whether every event is in: what is queued is all there will be. */
  get finished(): boolean {
    return this.#ended;
  }

  /** Every event queued, taken at once: for a finished channel, what it had to say (see openReplyStream). */
  drain(): ReplyEvent[] {
    const events = this.#queue;
    this.#queue = [];
    return events;
  }

  /** Events waiting to be read (the consumer's lag). */
  get queued(): number {
    return this.#queue.length;
  }

  next(): Promise<IteratorResult<ReplyEvent>> {
    const event = this.#queue.shift();
    if (event) return Promise.resolve({ value: event, done: false });
    if (this.#ended || this.#closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => (this.#waiting = resolve));
  }

  return(): Promise<IteratorResult<ReplyEvent>> {
    if (!this.#closed && !this.#ended) {
      this.#closed = true;
      this.onCancel?.();
    }
    this.#closed = true;
    this.#queue = [];
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<ReplyEvent> {
    return this;
  }
}
