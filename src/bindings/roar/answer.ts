// One ROAR message answered, for both of ROAR's transports (`POST /roar/message` and `/roar/ws`): checked, put to
// the receiver, answered with a signed `respond` message; the task's status goes out on `/roar/events`.
import { describeError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { ReceiverApi, RequestContext } from '../../receiver.js';
import type { JsonValue, SuccessResponse } from '../../schemas.js';
import { ask, type Ask } from '../../faces/ask.js';
import type { BearerVerifier } from '../../edge/oauth.js';
import type { FaceSessions } from '../../faces/sessions.js';
import type { Catalogue } from '../../faces/catalogue.js';
import { canonicalJson } from './canonical.js';
import { roarCard } from './card.js';
import type { StreamAnswer } from '../../faces/stream.js';
import type { RoarEvents } from './events.js';
import type { RoarIdentity } from './identity.js';
import {
  checkSender,
  duplicate,
  errorPayload,
  okPayloadText,
  parseRoarMessage,
  replyText,
  REPLAY_WINDOW_MS,
  roarAction,
  type RoarMessage,
  type RoarSecurity,
} from './message.js';

/** What the ROAR face works with. */
export type RoarFaceDeps = {
  receiver: ReceiverApi;
  sessions: FaceSessions;
  catalogue: Catalogue;
  /** The identity; itself once loaded (no await on the hot path), a promise until then. */
  identity: () => RoarIdentity | Promise<RoarIdentity>;
  security: RoarSecurity;
  description: string;
  publicUrl?: string;
  maxBodyBytes: number;
  logger: Pick<Logger, 'error'>;
  /** Streams an answer (deltas, then the reply); used when a caller listens to deltas (the WebSocket). */
  stream: StreamAnswer;
  /** Whether the edge asks for a token (then an unsigned message's session is scoped by it). */
  tokensRequired?: boolean;
  /** The edge's OAuth verifier, when it takes access tokens (the card describes it). */
  oauth?: BearerVerifier | undefined;
  /** Where the tasks' statuses go out (`GET /roar/events`). */
  events: RoarEvents;
  now: () => number;
};

/** The session a message names (`context.session_id`), `""` for none (ROAR's StreamEvent default). */
function sessionOf(message: RoarMessage): string {
  const session = (message.context as { session_id?: unknown } | null | undefined)?.session_id;
  return typeof session === 'string' && session.length <= 200 ? session : '';
}

/** The outcome of one message: the HTTP status and the reply (a ROAR message, or a refusal). */
export type RoarOutcome = { status: number; text: string; message?: RoarMessage };

/**
 * Where a transport that can stream sends deltas: given the message's `context.deltas`, the listener for this
 * message's deltas, or `undefined` for the whole answer alone.
 */
export type DeltaListeners = (asked: JsonValue | undefined) => ((delta: string) => void) | undefined;

/**
 * Answers one ROAR message given as text: checks it, asks the receiver, and returns the signed reply. `baseUrl`
 * is asked for only by `discover` (the card's links), so other messages never build it. `caller` is who sent
 * it as the edge found (`callerOf`): a session's scope when messages are not signed.
 */
export async function answerRoarMessage(
  deps: RoarFaceDeps,
  text: string,
  baseUrl: () => string,
  signal?: AbortSignal,
  deltas?: DeltaListeners,
  caller?: string,
): Promise<RoarOutcome> {
  const signed = deps.security.secret !== undefined || (deps.security.trust?.size ?? 0) > 0;
  const message = parseRoarMessage(text, signed);
  const onDelta = deltas?.(message.context.deltas);
  const known = deps.identity();
  const identity = known instanceof Promise ? await known : known;
  checkSender(message, identity.did, deps.security);
  if (!(await deps.security.replay.firstSeen(message.id, REPLAY_WINDOW_MS))) throw duplicate(message);
  // The client's `context.session_id` is kept and echoed, scoped by who sent it: the verified signer when messages
  // are signed, else the token; two callers who pick the same id have two conversations.
  const principal = signed ? `did:${message.fromDid}` : caller;
  const action = roarAction(message, principal);
  if (action.kind === 'discover') {
    const card = roarCard({
      identity,
      description: deps.description,
      baseUrl: baseUrl(),
      protocols: await deps.catalogue.entries(),
      tokens: deps.tokensRequired ?? false,
      auth: await deps.oauth?.describe(),
    });
    return {
      status: 200,
      text: replyText(identity, message, okPayloadText(JSON.parse(JSON.stringify(card))), deps.security),
      message,
    };
  }
  if (action.kind === 'acknowledge')
    return { status: 200, text: replyText(identity, message, okPayloadText(null), deps.security), message };
  publishTask(deps, identity, message, action.sessionId, 'working');
  try {
    const context = signal ? { signal } : undefined;
    const reply =
      onDelta === undefined
        ? await ask(deps.receiver, deps.sessions, action.ask, context)
        : await streamedReply(deps, action.ask, context, onDelta);
    publishTask(deps, identity, message, action.sessionId, 'completed');
    return {
      status: 200,
      text: replyText(identity, message, okPayloadText(reply.body), deps.security, action.sessionId),
      message,
    };
  } catch (error) {
    const payload = errorPayload(error);
    publishTask(
      deps,
      identity,
      message,
      action.sessionId,
      'failed',
      String((payload as { error?: unknown }).error ?? 'error'),
    );
    if (payload.error === 'internal') deps.logger.error(`ROAR message ${message.id}: ${describeError(error)}`);
    return {
      status: 200,
      text: replyText(identity, message, canonicalJson(payload), deps.security, action.sessionId),
      message,
    };
  }
}

/** A task's status on `/roar/events`, built only while someone listens (most agents have no reader; it costs a clock read). */
function publishTask(
  deps: RoarFaceDeps,
  identity: RoarIdentity,
  message: RoarMessage,
  session: string | undefined,
  status: string,
  error?: string,
): void {
  if (deps.events.subscribers === 0) return;
  const data: Record<string, string> = { task_id: message.id, intent: message.intent, status };
  if (error !== undefined) data.error = error;
  deps.events.publish({
    type: 'task_update',
    source: identity.did,
    session_id: session ?? sessionOf(message),
    data,
    timestamp: deps.now() / 1000,
  });
}

/** The reply of a streamed answer, each delta handed to `onDelta` as it comes. */
async function streamedReply(
  deps: RoarFaceDeps,
  question: Ask,
  context: RequestContext | undefined,
  onDelta: (delta: string) => void,
): Promise<SuccessResponse> {
  let reply: SuccessResponse | undefined;
  for await (const event of deps.stream(question, context)) {
    if (event.type === 'delta') onDelta(event.delta);
    else reply = event.reply;
  }
  if (reply === undefined) throw new Error('The stream ended without a reply');
  return reply;
}
