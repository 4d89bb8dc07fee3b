// How the faces stream a reply (ROAR's WebSocket and SSE, A2A's message/stream): the receiver's pieces as it
// produces them (an LLM's text as it is written, a generator routine's yields), then the final reply.
import type { RequestContext, ReceiverApi } from '../receiver.js';
import type { JsonValue, SuccessResponse } from '../schemas.js';
import { ask, type Ask } from './ask.js';
import type { FaceSessions } from './sessions.js';

/** One event of a streamed reply: text as it is produced, then the whole reply. */
export type StreamEvent = { type: 'delta'; delta: string } | { type: 'done'; reply: SuccessResponse };

/** A streaming answerer: yields deltas (none for an answer that comes whole), then exactly one `done`; throws the receiver's AgoraError. */
export type StreamAnswer = (question: Ask, context?: RequestContext) => AsyncIterable<StreamEvent>;

/** The text a reply body shows as deltas: a string as it is, any other JSON serialized. */
export function replyText(body: JsonValue): string {
  return typeof body === 'string' ? body : JSON.stringify(body);
}

/**
 * Streams through the receiver's `onDelta` hook: each piece as it comes, then `done`. A reply that came whole (a
 * plain routine, a JSON protocol's reply, a receiver that does not stream) is `done` alone: each face shows it whole.
 */
export function receiverStream(receiver: ReceiverApi, sessions: FaceSessions | undefined): StreamAnswer {
  return async function* stream(question, context) {
    const pieces: string[] = [];
    let wake: (() => void) | undefined;
    let settled: { reply: SuccessResponse } | { error: unknown } | undefined;
    const nudge = () => {
      const resume = wake;
      wake = undefined;
      resume?.();
    };
    const onDelta = (delta: JsonValue) => {
      pieces.push(replyText(delta));
      nudge();
    };
    ask(receiver, sessions, question, { ...context, onDelta }).then(
      (reply) => {
        settled = { reply };
        nudge();
      },
      (error: unknown) => {
        settled = { error };
        nudge();
      },
    );
    for (;;) {
      while (pieces.length > 0) {
        const delta = pieces.shift()!;
        if (delta.length > 0) yield { type: 'delta', delta };
      }
      if (settled !== undefined) break;
      await new Promise<void>((resolve) => (wake = resolve));
    }
    if ('error' in settled) throw settled.error;
    yield { type: 'done', reply: settled.reply };
  };
}
