// The receiver's streaming entry points: a turn as a stream of events, and a conversation's events resumed.
import type { ConversationStore } from '../conversation/store.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { SuccessResponse } from '../schemas.js';
import { resumeEvents } from './resume.js';
import { streamTurn, type EventChannel, type ReplyEvent } from './stream.js';
import type { RequestContext } from './types.js';

// A resumed stream ends with `Request timeout` after this long without a new event (its turn's process may be gone).
const RESUME_IDLE_MS = 3 * 60 * 1000;

/** What every stream of a receiver shares: its store (and event log), the conversations' TTL, logger and counters. */
export type StreamingParts = { store: ConversationStore; ttlMs: number; logger: Logger; counters: Metrics };

/** The streams of one receiver, counted by kind. */
export class ReceiverStreams {
  readonly #parts: StreamingParts;

  constructor(parts: StreamingParts) {
    this.#parts = parts;
  }

  /** A turn (`run`, the plain query or follow-up) answered as events. */
  turn(
    kind: 'query' | 'follow_up',
    context: RequestContext | undefined,
    run: (inner: RequestContext) => Promise<SuccessResponse>,
  ): EventChannel {
    const { store, ttlMs, logger, counters } = this.#parts;
    counters.stream(kind);
    return streamTurn({ log: store.events, ttlMs, logger, metrics: counters, context, run });
  }

  /** A conversation's events after `lastEventId`, from whichever process wrote them. */
  resume(
    id: string,
    lastEventId: number | undefined,
    context: RequestContext | undefined,
  ): Promise<AsyncIterable<ReplyEvent>> {
    this.#parts.counters.stream('resume');
    // A resumption waits at most one LLM attempt's bound plus its retries for the next event.
    return resumeEvents(this.#parts.store, id, lastEventId, {
      signal: context?.signal ?? new AbortController().signal,
      idleMs: RESUME_IDLE_MS,
    });
  }
}
