// ROAR over HTTP: `/roar/health`, `/roar/card`, `/roar/agents` (public reads), `GET /roar/events` (the task feed)
// and `POST /roar/message`. Refusals are ROAR's error body `{"error": code, "message": text}`.
import { describeError, isAgoraError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { MountedRequest } from '../../edge/mount.js';
import { baseUrlOf, cleanPath, header } from '../../edge/request.js';
import { eventStream, json, jsonText, SSE_HEADERS, type EdgeResponse } from '../../edge/response.js';
import { callerOf } from '../../faces/sessions.js';
import { errorCodeOf, isBadBody, isTooLarge, readBodyText } from '../../faces/body.js';
import { answerRoarMessage, type RoarFaceDeps } from './answer.js';
import { roarCard } from './card.js';
import { RoarRefusal } from './message.js';

const HEALTH = '{"status":"ok","protocol":"roar/1.0"}';

/** A failure in ROAR's error shape, its code named after the status (`unauthorized`, `rate_limited`…). */
export function roarFailure(status: number, message: string, code = errorCodeOf(status)): EdgeResponse {
  return json(status, { error: code, message });
}

/** A refused WebSocket message as ROAR's socket error frame (a 400, such as a frame nested too deeply, is `invalid_message`). */
export function roarSocketFailure(status: number, message: string): string {
  return JSON.stringify({ type: 'error', error: status === 400 ? 'invalid_message' : errorCodeOf(status), message });
}

/** A refusal or an unexpected error as a ROAR error response. */
export function roarErrorResponse(error: unknown, logger: Pick<Logger, 'error'>): EdgeResponse {
  if (error instanceof RoarRefusal) {
    return jsonText(
      error.status,
      error.body,
      error.retryAfter === undefined ? {} : { 'retry-after': String(error.retryAfter) },
    );
  }
  if (isTooLarge(error)) return roarFailure(413, 'Request too large');
  // The edge's refusal of a body before any parse (nested too deeply): a message ROAR cannot take.
  if (isBadBody(error)) return roarFailure(400, error.message, 'invalid_message');
  // The replay store (Redis) down: a message cannot be checked against replays, so it is refused for now.
  if (isAgoraError(error) && error.code === 'STORE_UNAVAILABLE') {
    const response = roarFailure(503, 'Store unavailable', 'store_unavailable');
    response.headers['retry-after'] = '2';
    return response;
  }
  logger.error(`ROAR: ${describeError(error)}`);
  return roarFailure(500, 'Internal error');
}

/** Answers ROAR's HTTP routes (the guard has passed); any other path under `/roar` is a ROAR 404. */
export function roarHttp(deps: RoarFaceDeps): (request: MountedRequest) => Promise<EdgeResponse> {
  const baseUrl = (request: MountedRequest) => baseUrlOf(request, deps.publicUrl) ?? 'http://localhost';
  return async function handle(request) {
    try {
      const { method } = request;
      const read = method === 'GET' || method === 'HEAD';
      const path = cleanPath(request.path);
      switch (path) {
        case '/roar/health':
          if (read) return jsonText(200, HEALTH);
          break;
        case '/roar/card':
        case '/roar/agents': {
          if (!read) break;
          const card = roarCard({
            identity: await deps.identity(),
            description: deps.description,
            baseUrl: baseUrl(request),
            protocols: await deps.catalogue.entries(),
            tokens: deps.tokensRequired ?? false,
            auth: await deps.oauth?.describe(),
          });
          return json(200, path === '/roar/card' ? card : { agents: [card] }, {
            'cache-control': 'public, max-age=60',
          });
        }
        case '/roar/events': {
          if (!read) break;
          // A HEAD learns the stream's headers without taking a listener's place.
          if (method === 'HEAD') return { status: 200, headers: { ...SSE_HEADERS }, body: '' };
          const session = new URLSearchParams(request.path.split('?')[1] ?? '').get('session_id') ?? undefined;
          const feed = deps.events.subscribe(session);
          if (feed === undefined) {
            const busy = roarFailure(503, 'Too many event listeners', 'busy');
            busy.headers['retry-after'] = '5';
            return busy;
          }
          return eventStream(feed);
        }
        case '/roar/message': {
          if (method !== 'POST') break;
          const text = await readBodyText(request, deps.maxBodyBytes);
          const caller = callerOf(request, deps.tokensRequired ?? false);
          const outcome = await answerRoarMessage(
            deps,
            text,
            () => baseUrl(request),
            request.signal,
            undefined,
            caller,
          );
          // ROAR's canonical JSON escapes every non-ASCII character: its length is its byte count.
          return jsonText(outcome.status, outcome.text, {}, outcome.text.length);
        }
        case '/roar/ws':
        case '/roar/ws/stream':
          return roarFailure(426, `Upgrade to a WebSocket to talk ROAR on ${path}`);
        default:
          return roarFailure(404, 'Not found');
      }
      return roarFailure(405, 'Method not allowed');
    } catch (error) {
      return roarErrorResponse(error, deps.logger);
    }
  };
}
