// How every face puts a question to the receiver: one Agora query, or a turn of the conversation a face's
// session (ROAR `context.session_id`, A2A `contextId`) stands for.
import type { ReceiverApi, RequestContext } from '../receiver.js';
import type { JsonValue, QueryRequest, SuccessResponse } from '../schemas.js';
import type { FaceSessions } from './sessions.js';

/** A question as the faces put it. */
export type Ask = {
  /** A protocol query when set (hex or base64 hash); natural language otherwise. */
  protocolHash?: string;
  protocolSources?: string[];
  body: JsonValue;
  /** A session key (`sessionKey`: already scoped to its caller): its first ask opens a multiround conversation, the next ones are its turns. */
  session?: string;
};

/**
 * Answers an ask with the receiver: a single query, or the next turn of the session's conversation under the ask's
 * protocol (a new one when there is none yet, or it has expired). Throws the receiver's AgoraError.
 */
export function ask(
  receiver: ReceiverApi,
  sessions: FaceSessions | undefined,
  question: Ask,
  context?: RequestContext,
): Promise<SuccessResponse> {
  // Without a session, the receiver's own promise: no async layer of ours on the faces' hot path.
  if (question.session === undefined || sessions === undefined) return receiver.query(queryOf(question), context);
  const session = question.session;
  // One conversation per protocol in a session (a client that changes protocol opens a second one beside the
  // first); a single-round protocol's query keeps none.
  const turn = (lane: string | undefined) =>
    lane === undefined
      ? receiver.query(queryOf(question), context)
      : sessions.turn(receiver, session, lane, queryOf(question), context);
  const lane = sessions.laneOf(receiver, question.protocolHash);
  return lane instanceof Promise ? lane.then(turn) : turn(lane);
}

/** The Agora query an ask stands for (a session's first turn adds `multiround`). */
function queryOf(question: Ask): QueryRequest {
  const query: QueryRequest = { body: question.body };
  if (question.protocolHash !== undefined) query.protocolHash = question.protocolHash;
  if (question.protocolSources !== undefined) query.protocolSources = question.protocolSources;
  return query;
}
