// The ROAR face over HTTP: `/roar/health`, `/roar/card`, `/roar/agents`, `POST /roar/message`.
import { describeError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { ReceiverApi, RequestContext } from '../../receiver.js';
import type { SuccessResponse } from '../../schemas.js';
import { ask, type Ask, type SessionMap } from '../ask.js';
import type { CatalogEntry } from '../catalog.js';
import { asciiJsonText, baseUrlOf, bodyText, json, jsonText, readFaceBody, type FaceRequest, type FaceResponse } from '../_http.js';
import { canonicalJson } from './canonical.js';
import { roarCard } from './card.js';
import type { StreamAnswer } from '../stream.js';
import type { RoarEvents } from './events.js';
import type { RoarIdentity } from './identity.js';
import { checkSender, duplicate, errorPayload, okPayloadText, parseRoarMessage, replyText, REPLAY_WINDOW_MS, roarAction, RoarRefusal, type RoarMessage, type RoarSecurity } from './message.js';

/** What the ROAR face works with. */
export type RoarFaceDeps = {
  receiver: ReceiverApi;
  sessions: SessionMap;
  catalog: () => Promise<CatalogEntry[]>;
  /** The identity; itself once loaded (no await on the hot path), a promise until then. */
  identity: () => RoarIdentity | Promise<RoarIdentity>;
  security: RoarSecurity;
  description: string;
  publicUrl?: string;
  maxBodyBytes: number;
  logger: Pick<Logger, 'error'>;
  /** Streams an answer (deltas, then the reply); used when a caller listens to deltas (the WebSocket). */
  stream: StreamAnswer;
  /** Where the tasks' statuses go out (`GET /roar/events`). */
  events: RoarEvents;
  now: () => number;
};

/** The session a message names (`context.session_id`), if any. */
function sessionOf(message: RoarMessage): string | null {
  const session = (message.context as { session_id?: unknown } | null | undefined)?.session_id;
  return typeof session === 'string' && session.length <= 200 ? session : null;
}

const HEALTH = '{"status":"ok","protocol":"roar/1.0"}';

/** The outcome of one message: the HTTP status and the reply (a ROAR message, or a refusal). */
export type RoarOutcome = { status: number; text: string; message?: RoarMessage };

/**
 * Answers one ROAR message given as text: checks it, asks the receiver, and returns the signed reply. `baseUrl`
 * is asked for only by `discover` (the card's links), so other messages never build it.
 */
export async function answerRoarMessage(deps: RoarFaceDeps, text: string, baseUrl: () => string, signal?: AbortSignal, onDelta?: (delta: string) => void): Promise<RoarOutcome> {
  const message = parseRoarMessage(text);
  const known = deps.identity();
  const identity = known instanceof Promise ? await known : known;
  checkSender(message, identity.did, deps.security);
  if (!(await deps.security.replay.firstSeen(message.id, REPLAY_WINDOW_MS))) throw duplicate(message);
  const action = roarAction(message);
  if (action.kind === 'discover') {
    const card = roarCard({ identity, description: deps.description, baseUrl: baseUrl(), protocols: await deps.catalog() });
    return { status: 200, text: replyText(identity, message, okPayloadText(JSON.parse(JSON.stringify(card))), deps.security), message };
  }
  if (action.kind === 'acknowledge') return { status: 200, text: replyText(identity, message, okPayloadText(null), deps.security), message };
  publishTask(deps, identity, message, 'working');
  try {
    const context = signal ? { signal } : undefined;
    const reply = onDelta === undefined ? await ask(deps.receiver, deps.sessions, action.ask, context) : await streamedReply(deps, action.ask, context, onDelta);
    publishTask(deps, identity, message, 'completed');
    return { status: 200, text: replyText(identity, message, okPayloadText(reply.body), deps.security), message };
  } catch (error) {
    const payload = errorPayload(error);
    publishTask(deps, identity, message, 'failed', String((payload as { error?: unknown }).error ?? 'error'));
    if (payload.error === 'internal') deps.logger.error(`ROAR message ${message.id}: ${describeError(error)}`);
    return { status: 200, text: replyText(identity, message, canonicalJson(payload), deps.security), message };
  }
}

/** A task's status on `/roar/events`, built only while someone listens (most agents have no reader; it costs a clock read). */
function publishTask(deps: RoarFaceDeps, identity: RoarIdentity, message: RoarMessage, status: string, error?: string): void {
  if (deps.events.subscribers === 0) return;
  const data: Record<string, string> = { task_id: message.id, intent: message.intent, status };
  if (error !== undefined) data.error = error;
  deps.events.publish({ type: 'task_update', source: identity.did, session_id: sessionOf(message), data, timestamp: deps.now() / 1000 });
}

/** The reply of a streamed answer, each delta handed to `onDelta` as it comes. */
async function streamedReply(deps: RoarFaceDeps, question: Ask, context: RequestContext | undefined, onDelta: (delta: string) => void): Promise<SuccessResponse> {
  let reply: SuccessResponse | undefined;
  for await (const event of deps.stream(question, context)) {
    if (event.type === 'delta') onDelta(event.delta);
    else reply = event.reply;
  }
  if (reply === undefined) throw new Error('The stream ended without a reply');
  return reply;
}

/** A refusal or an unexpected error as a ROAR error response. */
export function roarFailure(error: unknown, logger: Pick<Logger, 'error'>): FaceResponse {
  if (error instanceof RoarRefusal) {
    return jsonText(error.status, error.body, error.retryAfter === undefined ? {} : { 'retry-after': String(error.retryAfter) });
  }
  if (error instanceof Error && error.name === 'AgoraError' && (error as { code?: string }).code === 'REQUEST_TOO_LARGE') {
    return json(413, { error: 'request_too_large', message: 'Request too large' });
  }
  // The replay store (Redis) down: a message cannot be checked against replays, so it is refused for now.
  if (error instanceof Error && error.name === 'AgoraError' && (error as { code?: string }).code === 'STORE_UNAVAILABLE') {
    return json(503, { error: 'store_unavailable', message: 'Store unavailable' }, { 'retry-after': '2' });
  }
  logger.error(`ROAR: ${describeError(error)}`);
  return json(500, { error: 'internal_error', message: 'Internal error' });
}

/** The ROAR routes; `undefined` for a path that is not ROAR's. Auth and rate limits are checked by the caller. */
export function createRoarFace(deps: RoarFaceDeps): { isPublic(path: string): boolean; handle(request: FaceRequest, path: string): Promise<FaceResponse | undefined> } {
  return {
    isPublic: (path) => path === '/roar/health' || path === '/roar/card' || path === '/roar/agents',
    async handle(request, path) {
      try {
        const read = request.method === 'GET' || request.method === 'HEAD';
        switch (path) {
          case '/roar/health':
            if (read) return jsonText(200, HEALTH);
            break;
          case '/roar/card':
          case '/roar/agents': {
            if (!read) break;
            const card = roarCard({ identity: await deps.identity(), description: deps.description, baseUrl: baseUrlOf(request, deps.publicUrl), protocols: await deps.catalog() });
            return json(200, path === '/roar/card' ? card : { agents: [card] }, { 'cache-control': 'public, max-age=60' });
          }
          case '/roar/events': {
            if (!read) break;
            const session = new URLSearchParams(request.path.split('?')[1] ?? '').get('session_id') ?? undefined;
            const feed = deps.events.subscribe(session);
            if (feed === undefined) return json(503, { error: 'busy', message: 'Too many event listeners' }, { 'retry-after': '5' });
            return { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' }, body: request.method === 'HEAD' ? '' : feed };
          }
          case '/roar/message': {
            if (request.method !== 'POST') break;
            const text = bodyText(await readFaceBody(request, deps.maxBodyBytes));
            const outcome = await answerRoarMessage(deps, text, () => baseUrlOf(request, deps.publicUrl), request.signal);
            return asciiJsonText(outcome.status, outcome.text);
          }
          default:
            return undefined;
        }
        return json(405, { error: 'method_not_allowed', message: 'Method not allowed' });
      } catch (error) {
        return roarFailure(error, deps.logger);
      }
    },
  };
}
