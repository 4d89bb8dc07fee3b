// A receiver's streaming capability: a query or follow-up answered as a stream of events, and a conversation's
// events resumed from its log (on any process sharing it).
import type { ConversationStore } from '../conversation/store.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { FollowUpRequest, QueryRequest, SuccessResponse } from '../schemas.js';
import type { EventChannel, ReplyEvent } from './event-channel.js';
import { resumeEvents } from './resume.js';
import { streamTurn } from './streamed-turn.js';
import type { ReplyStreaming, RequestContext } from './types.js';

// A resumed stream ends with `Request timeout` after this long without a new event (its turn's process may be gone).
const RESUME_IDLE_MS = 3 * 60 * 1000;

/** What the streams of a receiver share: its turns, store (and event log), the conversations' TTL, logger, counters. */
export type ReplyStreamParts = {
  /** The plain turns a stream runs. */
  turns: {
    query(request: QueryRequest, context?: RequestContext): Promise<SuccessResponse>;
    followUp(id: string, request: FollowUpRequest, context?: RequestContext): Promise<SuccessResponse>;
  };
  store: ConversationStore;
  ttlMs: number;
  logger: Logger;
  counters: Metrics;
};

/** The streams of one receiver, counted by kind. */
export class ReplyStreams implements ReplyStreaming {
  readonly #parts: ReplyStreamParts;

  constructor(parts: ReplyStreamParts) {
    this.#parts = parts;
  }

  queryStream(request: QueryRequest, context?: RequestContext): EventChannel {
    return this.#turn('query', context, (inner) => this.#parts.turns.query(request, inner));
  }

  followUpStream(id: string, request: FollowUpRequest, context?: RequestContext): EventChannel {
    return this.#turn('follow_up', context, (inner) => this.#parts.turns.followUp(id, request, inner));
  }

  /** A conversation's events after `lastEventId`, from whichever process wrote them. */
  events(id: string, lastEventId: number | undefined, context?: RequestContext): Promise<AsyncIterable<ReplyEvent>> {
    this.#parts.counters.stream('resume');
    return resumeEvents(this.#parts.store, id, lastEventId, {
      signal: context?.signal ?? new AbortController().signal,
      idleMs: RESUME_IDLE_MS,
    });
  }

  /** A turn (`run`, the plain query or follow-up) answered as events. */
  #turn(
    kind: 'query' | 'follow_up',
    context: RequestContext | undefined,
    run: (inner: RequestContext) => Promise<SuccessResponse>,
  ): EventChannel {
    const { store, ttlMs, logger, counters } = this.#parts;
    counters.stream(kind);
    return streamTurn({ log: store.events, ttlMs, logger, metrics: counters, context, run });
  }
}
