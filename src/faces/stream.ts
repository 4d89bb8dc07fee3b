// How the faces stream a reply (ROAR's WebSocket, A2A's message/stream): a source of deltas then a final reply.
// Until the receiver streams (issue 13), the fallback answers in one piece: one delta holding the whole text.
import type { RequestContext, ReceiverApi } from '../receiver.js';
import type { JsonValue, SuccessResponse } from '../schemas.js';
import { ask, type Ask, type SessionMap } from './ask.js';

/** One event of a streamed reply: text as it is produced, then the whole reply. */
export type StreamEvent = { type: 'delta'; delta: string } | { type: 'done'; reply: SuccessResponse };

/** A streaming answerer: yields deltas, then exactly one `done`; throws the receiver's AgoraError. */
export type StreamAnswer = (question: Ask, context?: RequestContext) => AsyncIterable<StreamEvent>;

/** The text a reply body shows as deltas: a string as it is, any other JSON serialized. */
export function replyText(body: JsonValue): string {
  return typeof body === 'string' ? body : JSON.stringify(body);
}

/** The fallback for a receiver that cannot stream: the whole reply as one delta, then `done`. */
export function wholeReplyStream(receiver: ReceiverApi, sessions: SessionMap): StreamAnswer {
  return async function* stream(question, context) {
    const reply = await ask(receiver, sessions, question, context);
    const text = replyText(reply.body);
    if (text.length > 0) yield { type: 'delta', delta: text };
    yield { type: 'done', reply };
  };
}
