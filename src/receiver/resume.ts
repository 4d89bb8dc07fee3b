// Resuming a streamed turn from its kept events (`GET /conversations/:id/events`), on any process sharing the log.
import type { ConversationEventLog, StoredEvent } from '../conversation/events.js';
import type { ConversationStore } from '../conversation/store.js';
import { AgoraError, FIXED_MESSAGES, isAgoraError } from '../errors.js';
import type { ReplyEvent } from './event-channel.js';
import { toReplyEvent } from './streamed-turn.js';

/** Options of {@link followEvents}. */
export type FollowOptions = {
  /** Ends the follow (the client went away). */
  signal: AbortSignal;
  /** How long to wait without a new event before ending with `Request timeout` (the turn's process may be gone). */
  idleMs: number;
};

/**
 * Where a resumption starts: the turn of the event `lastEventId` (after it), else the latest turn (from its first
 * kept event). Throws BAD_REQUEST for an id never sent or no longer kept; undefined when nothing is left to send.
 */
export function resumePoint(
  kept: readonly StoredEvent[],
  lastEventId: number | undefined,
): { turn: string; after: number } | undefined {
  const last = kept.at(-1);
  if (!last) {
    if (lastEventId !== undefined && lastEventId > 0)
      throw new AgoraError('BAD_REQUEST', `Last-Event-ID ${lastEventId} is not an event of this conversation`);
    return undefined;
  }
  if (lastEventId === undefined) {
    const first = kept.find((event) => event.turn === last.turn)!;
    return { turn: last.turn, after: first.id - 1 };
  }
  if (lastEventId > last.id)
    throw new AgoraError('BAD_REQUEST', `Last-Event-ID ${lastEventId} was never sent (the latest is ${last.id})`);
  const seen = kept.find((event) => event.id === lastEventId);
  if (!seen)
    throw new AgoraError(
      'BAD_REQUEST',
      `Last-Event-ID ${lastEventId} is no longer kept (the oldest kept is ${kept[0]!.id})`,
    );
  if (seen.kind !== 'delta') return undefined;
  return { turn: seen.turn, after: seen.id };
}

/**
 * The events a client missed of a conversation's streamed turn, then the rest live. Throws CONVERSATION_NOT_FOUND,
 * CONVERSATION_EXPIRED (the conversation's, whose events went with it) or BAD_REQUEST (see {@link resumePoint}).
 */
export async function resumeEvents(
  store: ConversationStore,
  id: string,
  lastEventId: number | undefined,
  options: FollowOptions,
): Promise<AsyncIterable<ReplyEvent>> {
  const log = store.events;
  if (!log) throw new AgoraError('CONVERSATION_NOT_FOUND');
  const kept = await log.after(id, 0);
  try {
    await store.get(id);
  } catch (error) {
    // A first turn still running (or failed) has events but no record yet.
    if (!(isAgoraError(error) && error.code === 'CONVERSATION_NOT_FOUND' && kept.length > 0)) throw error;
  }
  const start = resumePoint(kept, lastEventId);
  return start ? followEvents(log, id, start, kept, options) : nothing();
}

/** The events of one turn after `after`, as kept then live, ending with its `done` or `error` (never repeating one). */
export async function* followEvents(
  log: ConversationEventLog,
  conversationId: string,
  start: { turn: string; after: number },
  pending: StoredEvent[],
  options: FollowOptions,
): AsyncGenerator<ReplyEvent> {
  let cursor = start.after;
  let batch = pending;
  let idleSince = performance.now();
  for (;;) {
    const next = batch.find((event) => event.id > cursor);
    if (next && next.id > cursor + 1) {
      // The follower fell behind the retention: say so rather than skip what was dropped.
      yield failureEvent('BAD_REQUEST', `Events after ${cursor} are no longer kept`);
      return;
    }
    for (const event of batch) {
      if (event.id <= cursor) continue;
      cursor = event.id;
      idleSince = performance.now();
      if (event.turn !== start.turn) continue;
      yield toReplyEvent(event);
      if (event.kind !== 'delta') return;
    }
    if (options.signal.aborted) return;
    const left = options.idleMs - (performance.now() - idleSince);
    if (left > 0) {
      await log.waitAfter(conversationId, cursor, left, options.signal);
      if (options.signal.aborted) return;
      batch = await log.after(conversationId, cursor);
    } else {
      // Nothing new for idleMs: the turn's process may have died; end clearly rather than hang.
      yield failureEvent('REQUEST_TIMEOUT', FIXED_MESSAGES.REQUEST_TIMEOUT);
      return;
    }
  }
}

function failureEvent(code: 'BAD_REQUEST' | 'REQUEST_TIMEOUT', message: string): ReplyEvent {
  return { data: JSON.stringify({ status: 'failure', error: message }), type: 'error', error: message, code };
}

async function* nothing(): AsyncGenerator<ReplyEvent> {}
