// The Agora wire (spec §2) as a mount over a receiver: queries, follow-ups, streamed replies, the documents, the
// probes and the metrics. The guard (tokens, rate limit, body cap, cross-site rule) is the edge's.
import { formatUsage, USAGE_HEADER, type TurnUsage } from '../_usage.js';
import type { AgoraError } from '../errors.js';
import { consoleLogger, type Logger } from '../log.js';
import { normalizeHash } from '../protocol/document.js';
import type { ReceiverApi, RequestContext } from '../receiver.js';
import { parseFollowUpRequest, parseQueryRequest } from '../schemas.js';
import { parseLastEventId, wantsEventStream } from '../edge/events.js';
import { compose, DEFAULT_MAX_BODY_BYTES, type EdgeOptions, type Mount, type MountedRequest } from '../edge/mount.js';
import { baseUrlOf, header, type EdgeRequest } from '../edge/request.js';
import { failure, JSON_TYPE, respond, type EdgeResponse } from '../edge/response.js';
import { failureResponse, STORE_RETRY_AFTER } from '../edge/status.js';
import { AGORA_ROUTES, matchRoute } from './routes.js';
import { agoraStatus } from './status.js';
import { openReplyStream, resumedStream } from './stream.js';
import { wellknownResponse } from './wellknown.js';

/** Options of the Agora mount. */
export type AgoraOptions = {
  /** Largest request body, in bytes (default 1 MiB): also the bound on a parsed query's size. */
  maxBodyBytes?: number;
  /** The agent's public base URL, given to the receiver as `context.baseUrl`; else derived from the request. */
  publicUrl?: string;
  /** Where internal errors go (default: stderr). */
  logger?: Pick<Logger, 'error'>;
  /**
   * Tell callers the LLM usage of each turn the LLM answered, in an `Agora-Usage` response header on `POST /` and
   * `POST /conversations/:id` (token counts and the model's name, never text; default false: what an agent spends, and
   * on which model, is its operator's to share). A hub's chain records it per hop.
   */
  reportUsage?: boolean;
};

const TEXT_TYPE = 'text/plain; charset=utf-8';
const METRICS_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
const END_BODY = '{"status":"success","body":null}';
const HEALTH_BODY = '{"status":"ok"}';
// Alive and answering; `protocols/` still being read at the start (a lookup that misses waits for it).
const HEALTH_LOADING_BODY = '{"status":"ok","protocols":"loading"}';
const READY_BODY = '{"status":"ready"}';
const DEGRADED_BODY = '{"status":"degraded","store":"unavailable"}';
const CONVERSATION_ID = /^[A-Za-z0-9_-]{1,128}$/;
const EMPTY = Buffer.alloc(0);

/**
 * The Agora wire as a mount: compose it with faces and dashboards (`compose`), or serve it alone.
 * @example const edge = compose([agoraMount(receiver)]); const response = await edge.handle({ method: 'GET', path: '/wellknown', headers: {}, body: undefined });
 */
export function agoraMount(receiver: ReceiverApi, options: AgoraOptions = {}): Mount {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const publicUrl = options.publicUrl?.replace(/\/+$/, '');
  const logger = options.logger ?? consoleLogger();
  // What the receiver can do besides answering: fixed for its life, read once.
  const { streaming, health } = receiver.capabilities;
  const reportUsage = options.reportUsage === true;

  // Nearly every request carries the same Host: remember the last one rather than test and build it each time.
  let lastHost: string | undefined;
  let lastBaseUrl: string | undefined;

  function contextOf(request: EdgeRequest): RequestContext {
    let baseUrl = publicUrl;
    if (baseUrl === undefined && request.baseUrl !== undefined) baseUrl = baseUrlOf(request, undefined);
    else if (baseUrl === undefined) {
      const host = header(request, 'host');
      if (host !== lastHost) {
        lastHost = host;
        lastBaseUrl = baseUrlOf(request, undefined);
      }
      baseUrl = lastBaseUrl;
    }
    const context: RequestContext = {
      baseUrl,
      remoteAddress: request.remoteAddress,
      signal: request.signal,
      ...(request.log ? { outcome: request.log } : {}),
    };
    // Off (the default), the usage costs the hot path this one test.
    if (reportUsage) context.usage = { inputTokens: 0, outputTokens: 0 };
    return context;
  }

  // A reply, with the turn's LLM usage in its header when it is reported and the LLM answered.
  function replyOf(reply: unknown, usage: TurnUsage | undefined): EdgeResponse {
    const response = respond(200, JSON_TYPE, JSON.stringify(reply));
    if (usage?.model !== undefined || (usage && usage.inputTokens + usage.outputTokens > 0))
      response.headers[USAGE_HEADER] = formatUsage(usage);
    return response;
  }

  const wire = { status: (error: AgoraError) => agoraStatus(error.code), shape: failure, logger };
  const toFailure = (error: unknown, request: EdgeRequest): EdgeResponse => failureResponse(request, error, wire);

  // A query, the hot path: a small async function on purpose, since V8 keeps an async function's whole register file
  // each time it suspends, and one function for every route had many.
  async function answerQuery(request: EdgeRequest): Promise<EdgeResponse> {
    try {
      const query = parseQueryRequest(
        request.body ?? (request.loadBody ? await request.loadBody() : EMPTY),
        maxBodyBytes,
      );
      if (streaming && wantsEventStream(request.headers.accept))
        return await openReplyStream(streaming.queryStream(query, contextOf(request)));
      const context = contextOf(request);
      return replyOf(await receiver.query(query, context), context.usage);
    } catch (error) {
      // Refused before any answer (unknown protocol, bad body): the request log still says how it ended.
      if (request.log && request.log.taken === undefined) request.log.taken = 'failure';
      return toFailure(error, request);
    }
  }

  // Every route but a query.
  async function answerOther(request: MountedRequest): Promise<EdgeResponse> {
    const route = matchRoute(request.path);
    try {
      const { method } = request;
      const isHead = method === 'HEAD';
      const isRead = method === 'GET' || isHead;
      switch (route?.kind) {
        case undefined:
          return failure(404, 'Not found');
        case 'conversation': {
          if (method !== 'POST' && method !== 'DELETE') break;
          const id = route.param;
          // Checked before the receiver: a malformed id can never name a conversation, and never reaches a store.
          if (!CONVERSATION_ID.test(id)) return failure(404, 'Conversation not found');
          if (method === 'DELETE') {
            await receiver.end(id);
            return respond(200, JSON_TYPE, END_BODY);
          }
          const followUp = parseFollowUpRequest(
            request.body ?? (request.loadBody ? await request.loadBody() : EMPTY),
            maxBodyBytes,
          );
          if (streaming && wantsEventStream(request.headers.accept))
            return await openReplyStream(streaming.followUpStream(id, followUp, contextOf(request)));
          const context = contextOf(request);
          return replyOf(await receiver.followUp(id, followUp, context), context.usage);
        }
        case 'events': {
          if (method !== 'GET') break;
          if (!CONVERSATION_ID.test(route.param) || !streaming) return failure(404, 'Conversation not found');
          const lastEventId = parseLastEventId(request.headers['last-event-id']);
          const controller = new AbortController();
          const events = await streaming.events(route.param, lastEventId, {
            ...contextOf(request),
            signal: controller.signal,
          });
          return resumedStream(events, controller);
        }
        case 'wellknown':
          if (!isRead) break;
          // Built once per change: an ETag (If-None-Match → 304) and gzip/Brotli made once.
          return await wellknownResponse(receiver, request, contextOf(request));
        case 'protocol': {
          if (!isRead) break;
          let hash: string | undefined;
          try {
            hash = normalizeHash(decodeURIComponent(route.param));
          } catch {
            hash = undefined;
          }
          const text = hash === undefined ? undefined : await receiver.document(hash);
          if (text === undefined) return failure(404, 'Protocol not found');
          const response = respond(200, TEXT_TYPE, text, isHead);
          // Content-addressed, so cacheable forever; nosniff because the text may come from a peer.
          response.headers['cache-control'] = 'public, max-age=31536000, immutable';
          response.headers['x-content-type-options'] = 'nosniff';
          return response;
        }
        case 'metrics':
          if (!isRead) break;
          return respond(200, METRICS_TYPE, await receiver.metrics(), isHead);
        case 'health':
          if (!isRead) break;
          return respond(200, JSON_TYPE, health?.loading() ? HEALTH_LOADING_BODY : HEALTH_BODY, isHead);
        case 'ready': {
          if (!isRead) break;
          if (health && !(await health.ready())) {
            const response = respond(503, JSON_TYPE, DEGRADED_BODY, isHead);
            response.headers['retry-after'] = STORE_RETRY_AFTER;
            return response;
          }
          return respond(200, JSON_TYPE, READY_BODY, isHead);
        }
        case 'root':
          break;
      }
      const response = failure(405, 'Method not allowed');
      response.headers.allow = route.allow;
      return response;
    } catch (error) {
      return toFailure(error, request);
    }
  }

  return {
    name: 'agora',
    routes: AGORA_ROUTES,
    handle(request) {
      return request.route?.name === 'root' && request.method === 'POST' ? answerQuery(request) : answerOther(request);
    },
    failure,
  };
}

/** Options of {@link createHandler}: the Agora mount's and the edge's guard. */
export type HttpOptions = AgoraOptions &
  Omit<EdgeOptions, 'logger'> & { logger?: Pick<Logger, 'error' | 'warn'> & Partial<Pick<Logger, 'debug'>> };

/**
 * The whole of spec §2 as a framework-free function (the Agora mount behind its own guard); adapters only translate.
 * @example const handle = createHandler(receiver); const response = await handle({ method: 'GET', path: '/wellknown', headers: {}, body: undefined });
 */
export function createHandler(
  receiver: ReceiverApi,
  options: HttpOptions = {},
): (request: EdgeRequest) => Promise<EdgeResponse> {
  const edge = compose([agoraMount(receiver, options)], { ...options, logger: options.logger ?? consoleLogger() });
  return edge.handle;
}
