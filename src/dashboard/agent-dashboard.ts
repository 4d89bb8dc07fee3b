// `GET /dashboard` on an agent, as a mount: the page, its JSON (`/dashboard/api/…`) and its live feed
// (`/dashboard/events`). Declared public to the edge: the dashboard applies its own access rule (see access.ts);
// the edge's guard (rate limit, cross-site rule) runs first.
import { describeError } from '../errors.js';
import { sseFrame } from '../edge/events.js';
import type { Mount, MountedRequest, MountRoute } from '../edge/mount.js';
import { consoleLogger, type Logger } from '../log.js';
import type { Receiver } from '../receiver.js';
import type { EdgeResponse } from '../edge/response.js';
import { DashboardAccess, type AccessKind } from './access.js';
import { AgentData } from './agent-data.js';
import { AssetServer, EventFeeds, redirectToFolder, sendFailure, sendJson, sendRefusal, subPath } from './_http.js';
import { DashboardRecorder, type RecorderEvent, type RecorderOptions } from './recorder.js';

/** The path the dashboard is served under. */
export const DASHBOARD_PATH = '/dashboard';

/** The dashboard's route: public to the edge, which leaves the access rule to the dashboard. */
export const DASHBOARD_ROUTES: readonly MountRoute[] = [
  { path: DASHBOARD_PATH, prefix: true, public: true, allow: 'GET, HEAD, POST, OPTIONS' },
];

/** Options of {@link createAgentDashboard}. */
export type AgentDashboardOptions = {
  /** Bearer tokens, as the agent's (see the README's token rules). */
  tokens?: readonly string[];
  /** How tokens are set where the dashboard runs, for its refusals (default: the CLI's `--token`). */
  tokenAdvice?: string;
  /** Whether the agent's edge takes OAuth access tokens (its guard verifies them; the page signs in with one). */
  oauth?: boolean;
  /** Called after an approval or rejection from the page: the generator's `forgetStatuses`, so it applies at once. */
  onReviewed?: () => void;
  /** The recorder's clock and sizes (tests inject a clock). */
  recorder?: RecorderOptions;
  logger?: Pick<Logger, 'error'>;
};

/** The agent's dashboard: a mount, its recorder, and the cue that routines changed. */
export interface AgentDashboard extends Mount {
  /** Where it is served (`/dashboard`), under the agent's own prefix. */
  readonly prefix: string;
  readonly recorder: DashboardRecorder;
  /** Tells open pages to re-read the routines (give it to the generator's `onStatus`). */
  routinesChanged(): void;
  /** Stops recording and ends the live feeds. */
  close(): void;
}

// Changes are pushed at most this often: a burst of queries is one message, and the page still updates within a second.
const PUSH_MS = 250;
const ROUTINE_ACTION = /^\/api\/routines\/([A-Za-z0-9._-]{1,200})\/(approve|reject)$/;
const PROTOCOL_TEXT = /^\/api\/protocols\/([0-9a-f]{40})$/;

/**
 * The agent's dashboard: Protocols, Live, Cost and the routines the LLM wrote, with Approve / Reject.
 * Starts recording the receiver's queries and LLM calls at once; `close()` stops it and ends the live feeds.
 * @example const edge = compose([agoraMount(receiver), createAgentDashboard(receiver, { tokens })], { tokens });
 */
export function createAgentDashboard(receiver: Receiver, options: AgentDashboardOptions = {}): AgentDashboard {
  const logger = options.logger ?? consoleLogger();
  const access = new DashboardAccess(options.tokens ?? [], options.tokenAdvice, options.oauth);
  const recorder = new DashboardRecorder(options.recorder);
  const data = new AgentData(receiver, recorder, options.onReviewed);
  const assets = new AssetServer();
  const feeds = new EventFeeds();
  const detach = recorder.attach(receiver.counters);

  let pending: RecorderEvent[] = [];
  let timer: NodeJS.Timeout | undefined;
  const push = async () => {
    timer = undefined;
    const events = pending;
    pending = [];
    try {
      feeds.send('changed', {
        events,
        live: await data.live(),
        totals: receiver.counters.snapshot(),
        protocols: recorder.totals(),
        at: Date.now(),
      });
    } catch (error) {
      logger.error(`dashboard: live update failed: ${describeError(error)}`);
    }
  };
  // Subscribed only while a page is open: with none, a query costs the recorder's bucket increments alone.
  let stopListening: (() => void) | undefined;
  const listen = () => {
    stopListening ??= recorder.subscribe((event) => {
      // Bounded between pushes: a flood of queries sends the latest 50, the counts carry the rest.
      if (pending.length >= 50) pending.shift();
      pending.push(event);
      timer ??= setTimeout(() => void push(), PUSH_MS);
    });
  };
  const feedClosed = () => {
    if (feeds.size > 0) return;
    stopListening?.();
    stopListening = undefined;
  };

  async function api(path: string, method: string, url: string): Promise<EdgeResponse | undefined> {
    if (method === 'GET' || method === 'HEAD') {
      switch (path) {
        case '/api/overview':
          return sendJson(200, { ...data.overview(), tokens: access.tokensEnabled });
        case '/api/protocols': {
          // Paged: ?offset=&limit= (at most 1,000 rows; 100 by default), with the total.
          const query = new URLSearchParams(url.includes('?') ? url.slice(url.indexOf('?') + 1) : '');
          const number = (name: string) =>
            /^\d{1,9}$/.test(query.get(name) ?? '') ? Number(query.get(name)) : undefined;
          return sendJson(200, await data.protocols(number('offset'), number('limit')));
        }
        case '/api/live':
          return sendJson(200, { ...(await data.live()), recent: recorder.recent() });
        case '/api/cost':
          return sendJson(200, data.cost());
        case '/api/routines':
          return sendJson(200, await data.routines());
      }
      const text = PROTOCOL_TEXT.exec(path);
      if (text) {
        const body = await data.protocolText(text[1]!);
        return body === undefined
          ? sendFailure(404, 'Protocol not found')
          : sendJson(200, { hash: text[1], text: body });
      }
    }
    const action = ROUTINE_ACTION.exec(path);
    if (action && method === 'POST')
      return sendJson(200, await data.review(action[1]!, action[2] === 'approve' ? 'approve' : 'reject'));
    return undefined;
  }

  async function handle(request: MountedRequest): Promise<EdgeResponse> {
    const url = request.path;
    const path = subPath(url, DASHBOARD_PATH);
    const { method } = request;
    // The page links its assets relatively (`assets/…`, `api/…`), so it must be read at `…/dashboard/`, under any
    // prefix.
    if (!url.startsWith(`${DASHBOARD_PATH}/`)) return redirectToFolder();
    const kind: AccessKind =
      path === '/api/access'
        ? 'page'
        : path.startsWith('/api/')
          ? method === 'POST'
            ? 'write'
            : 'read'
          : path === '/events'
            ? 'read'
            : 'page';
    const refusal = access.check(request, kind);
    if (refusal) return sendRefusal(refusal, kind);
    if (path === '/api/access') return sendJson(200, { tokens: access.tokensEnabled });
    if (kind === 'page') {
      if (method !== 'GET' && method !== 'HEAD') return sendFailure(405, 'Method not allowed', { allow: 'GET, HEAD' });
      const name = path === '/' ? 'agent.html' : path.startsWith('/assets/') ? path.slice(8) : '';
      return (await assets.answer(name)) ?? sendFailure(404, 'Not found');
    }
    if (path === '/events') {
      if (method !== 'GET') return sendFailure(405, 'Method not allowed', { allow: 'GET' });
      const opened = feeds.open(
        [
          sseFrame(
            'hello',
            JSON.stringify({
              live: await data.live(),
              recent: recorder.recent(),
              totals: receiver.counters.snapshot(),
            }),
          ),
        ],
        feedClosed,
      );
      if (feeds.size > 0) listen();
      return opened;
    }
    return (await api(path, method, url)) ?? sendFailure(404, 'Not found');
  }

  return {
    name: 'dashboard',
    routes: DASHBOARD_ROUTES,
    prefix: DASHBOARD_PATH,
    recorder,
    handle,
    failure: (status, message) => sendFailure(status, message),
    routinesChanged() {
      feeds.send('routines', {});
    },
    close() {
      detach();
      stopListening?.();
      if (timer) clearTimeout(timer);
      feeds.close();
    },
  };
}
