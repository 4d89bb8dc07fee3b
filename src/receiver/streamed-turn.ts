// A turn answered as a stream of events: the receiver's streaming variant of query/followUp, knowing no HTTP.
import { nanoid } from 'nanoid';
import type { ConversationEventLog, EventKind, StoredEvent } from '../conversation/events.js';
import { AgoraError, describeError, isAgoraError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { JsonValue, SuccessResponse } from '../schemas.js';
import type { RequestContext } from './context.js';
import { EventChannel, type ReplyEvent } from './event-channel.js';

/** What {@link streamTurn} needs from its receiver. */
export type StreamTurnOptions = {
  /** Where the events of multiround turns are kept for resumption (none: nothing is kept). */
  log: ConversationEventLog | undefined;
  /** How long kept events last after the latest, ms (the conversation's TTL). */
  ttlMs: number;
  logger: Logger;
  metrics: Metrics;
  /** Runs the turn with a context whose `onDelta` and `onTurn` feed the stream. */
  run(context: RequestContext): Promise<SuccessResponse>;
  context?: RequestContext;
};

/** The wire data of an event: a delta (with the conversation id on a first turn's first event), a reply, a failure. */
function deltaData(delta: JsonValue, conversationId: string | undefined): string {
  return conversationId === undefined ? JSON.stringify({ delta }) : JSON.stringify({ delta, conversationId });
}

function failureData(message: string): string {
  return JSON.stringify({ status: 'failure', error: message });
}

/** A stored event as a typed one (the data is ours, written by {@link streamTurn}). */
export function toReplyEvent(stored: StoredEvent): ReplyEvent {
  const value = JSON.parse(stored.data) as { delta?: JsonValue; error?: string };
  if (stored.kind === 'delta') return { id: stored.id, data: stored.data, type: 'delta', delta: value.delta ?? null };
  if (stored.kind === 'done')
    return { id: stored.id, data: stored.data, type: 'done', reply: value as SuccessResponse };
  return { id: stored.id, data: stored.data, type: 'error', error: value.error ?? 'Internal error' };
}

/**
 * Answers one turn as a stream. A multiround turn's events are kept in `log` (ids from the log) and the turn goes
 * on when the consumer stops (`return()`), so its state is saved and its stream can be resumed; a single-round turn
 * is aborted at once when the consumer stops (its LLM call closed, no tokens paid for nobody).
 */
export function streamTurn(options: StreamTurnOptions): EventChannel {
  const { log, ttlMs, logger, metrics } = options;
  const channel = new EventChannel();
  // The turn's signal, made when something first needs it (an LLM call, a tool: see RequestContext.signalWhenNeeded)
  // or when the turn is aborted: a plain routine's turn never makes one.
  let controller: AbortController | undefined;
  const made = () => (controller ??= new AbortController());
  const signal = () => made().signal;
  const abort = (reason: unknown) => made().abort(reason);
  const outer = options.context?.signal;
  const forward = () => abort(outer?.reason);
  if (outer?.aborted) forward();
  else outer?.addEventListener('abort', forward, { once: true });

  let turnKey: string | undefined;
  let started = false;
  /** The conversation whose log keeps this turn's events; null for a single-round query. */
  let conversationId: string | null = null;
  /** Set on a multiround first turn: the first event carries the new conversation's id. */
  let announce: string | undefined;
  let localId = 0;
  // Events go out in order: each waits for the id of the one before.
  let tail: Promise<unknown> = Promise.resolve();
  let kept = false;

  const emit = (kind: EventKind, data: string, build: (id: number | undefined) => ReplyEvent) => {
    if (!started || conversationId === null || !log) {
      channel.push(build(++localId));
      return;
    }
    const id = conversationId;
    const turn = (turnKey ??= nanoid(12));
    kept = true;
    tail = tail
      .then(() => log.append(id, { turn, kind, data }, ttlMs))
      .then(
        (eventId) => channel.push(build(eventId)),
        (error: unknown) => {
          logger.warn(`conversation ${id}: a streamed event could not be kept: ${describeError(error)}`);
          channel.push(build(undefined));
        },
      );
  };

  const onDelta = (delta: JsonValue) => {
    metrics.streamDelta();
    const data = deltaData(delta, announce);
    announce = undefined;
    emit('delta', data, (id) => ({ id, data, type: 'delta', delta }));
  };

  channel.onCancel = () => {
    // A conversation's turn runs on when its client goes: it is saved, and its stream can be resumed.
    if (started && conversationId !== null) return;
    abort(new AgoraError('BAD_REQUEST', 'Stream closed by the client'));
  };

  // The caller's context with the stream's own signal and callbacks, its fields written out: a spread followed by
  // more fields takes V8's slow path (about 2 µs, more than the rest of this function).
  const context: RequestContext = {
    baseUrl: options.context?.baseUrl,
    remoteAddress: options.context?.remoteAddress,
    signal: undefined,
    signalWhenNeeded: signal,
    outcome: options.context?.outcome,
    onDelta,
    onTurn(id, first) {
      started = true;
      channel.markStarted();
      conversationId = id;
      // A follow-up's client knows its conversation: only a first turn announces one.
      if (id !== null && first) announce = id;
    },
  };
  const finish = () => {
    outer?.removeEventListener('abort', forward);
    channel.end();
  };
  // The turn's end as its last event; kept events are pushed once their ids come back from the log, so the channel
  // ends after them. (Promise callbacks, not an async function: a routine's streamed turn is on the hot path.)
  const ended = () => (kept ? void tail.then(finish) : finish());
  let running: Promise<SuccessResponse>;
  try {
    running = options.run(context);
  } catch (error) {
    running = Promise.reject(error);
  }
  const failed = (error: unknown) => {
    if (controller?.signal.aborted && !outer?.aborted) metrics.llmAborted();
    const failure = isAgoraError(error) ? error : new AgoraError('INTERNAL', undefined, { cause: error });
    const data =
      announce === undefined
        ? failureData(failure.message)
        : JSON.stringify({ status: 'failure', error: failure.message, conversationId: announce });
    emit('error', data, (id) => ({
      id,
      data,
      type: 'error',
      error: failure.message,
      code: failure.code,
    }));
    ended();
  };
  running.then((reply) => {
    let data: string;
    try {
      data = JSON.stringify(reply);
    } catch (error) {
      return failed(error);
    }
    emit('done', data, (id) => ({ id, data, type: 'done', reply }));
    ended();
  }, failed);
  return channel;
}
