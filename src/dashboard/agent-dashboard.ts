// `GET /dashboard` on an agent: the page, its JSON (`/dashboard/api/…`) and its live feed (`/dashboard/events`).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describeError, isAgoraError } from '../errors.js';
import type { ExtraRoutes } from '../http/server.js';
import { consoleLogger, type Logger } from '../log.js';
import type { Receiver } from '../receiver.js';
import { AgentData } from './agent-data.js';
import { AssetServer, DashboardAccess, EventFeeds, redirectToFolder, sendFailure, sendJson, sendRefusal, subPath, type AccessKind } from './_http.js';
import { DashboardRecorder, type RecorderEvent, type RecorderOptions } from './recorder.js';

/** The path the dashboard is served under. */
export const DASHBOARD_PATH = '/dashboard';

/** Options of {@link createAgentDashboard}. */
export type AgentDashboardOptions = {
  /** Bearer tokens, as the agent's (see the README's token rules). */
  tokens?: readonly string[];
  /** Called after an approval or rejection from the page: the generator's `forgetStatuses`, so it applies at once. */
  onReviewed?: () => void;
  /** The recorder's clock and sizes (tests inject a clock). */
  recorder?: RecorderOptions;
  logger?: Pick<Logger, 'error'>;
};

/** A mounted dashboard: routes for `startServer`/`agoraRouter`, its recorder, and the cue that routines changed. */
export type AgentDashboard = ExtraRoutes & {
  recorder: DashboardRecorder;
  /** Tells open pages to re-read the routines (give it to the generator's `onStatus`). */
  routinesChanged(): void;
};

// Changes are pushed at most this often: a burst of queries is one message, and the page still updates within a second.
const PUSH_MS = 250;
const ROUTINE_ACTION = /^\/api\/routines\/([A-Za-z0-9._-]{1,200})\/(approve|reject)$/;
const PROTOCOL_TEXT = /^\/api\/protocols\/([0-9a-f]{40})$/;

/**
 * The agent's dashboard: Protocols, Live, Cost and the routines the LLM wrote, with Approve / Reject.
 * Starts recording the receiver's queries and LLM calls at once; `close()` stops it and ends the live feeds.
 * @example await startServer(receiver, { routes: createAgentDashboard(receiver) });
 */
export function createAgentDashboard(receiver: Receiver, options: AgentDashboardOptions = {}): AgentDashboard {
  const logger = options.logger ?? consoleLogger();
  const access = new DashboardAccess(options.tokens ?? []);
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
      feeds.send('changed', { events, live: await data.live(), totals: receiver.counters.snapshot(), protocols: recorder.totals(), at: Date.now() });
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

  async function api(path: string, method: string, response: ServerResponse): Promise<boolean> {
    if (method === 'GET') {
      switch (path) {
        case '/api/overview':
          sendJson(response, 200, { ...data.overview(), tokens: access.tokensEnabled });
          return true;
        case '/api/protocols':
          sendJson(response, 200, await data.protocols());
          return true;
        case '/api/live':
          sendJson(response, 200, { ...(await data.live()), recent: recorder.recent() });
          return true;
        case '/api/cost':
          sendJson(response, 200, data.cost());
          return true;
        case '/api/routines':
          sendJson(response, 200, await data.routines());
          return true;
      }
      const text = PROTOCOL_TEXT.exec(path);
      if (text) {
        const body = await data.protocolText(text[1]!);
        if (body === undefined) sendFailure(response, 404, 'Protocol not found');
        else sendJson(response, 200, { hash: text[1], text: body });
        return true;
      }
    }
    const action = ROUTINE_ACTION.exec(path);
    if (action && method === 'POST') {
      sendJson(response, 200, await data.review(action[1]!, action[2] === 'approve' ? 'approve' : 'reject'));
      return true;
    }
    return false;
  }

  async function handle(incoming: IncomingMessage, response: ServerResponse, url: string): Promise<void> {
    const path = subPath(url, DASHBOARD_PATH);
    const method = incoming.method ?? 'GET';
    // The page links its assets relatively (`assets/…`, `api/…`), so it must be read at `…/dashboard/`, under any prefix.
    if (!url.startsWith(`${DASHBOARD_PATH}/`)) return redirectToFolder(response);
    const kind: AccessKind = path === '/api/access' ? 'page' : path.startsWith('/api/') ? (method === 'POST' ? 'write' : 'read') : path === '/events' ? 'read' : 'page';
    const refusal = access.check(incoming, kind);
    if (refusal) return sendRefusal(response, refusal, kind);
    try {
      if (path === '/api/access') return sendJson(response, 200, { tokens: access.tokensEnabled });
      if (kind === 'page') {
        if (method !== 'GET' && method !== 'HEAD') return sendFailure(response, 405, 'Method not allowed', { allow: 'GET, HEAD' });
        const name = path === '/' ? 'agent.html' : path.startsWith('/assets/') ? path.slice(8) : '';
        if (!(await assets.send(response, name, method === 'HEAD'))) sendFailure(response, 404, 'Not found');
        return;
      }
      if (path === '/events') {
        if (method !== 'GET') return sendFailure(response, 405, 'Method not allowed', { allow: 'GET' });
        feeds.open(response, [{ event: 'hello', data: { live: await data.live(), recent: recorder.recent(), totals: receiver.counters.snapshot() } }], feedClosed);
        if (feeds.size > 0) listen();
        return;
      }
      if (!(await api(path, method, response))) sendFailure(response, 404, 'Not found');
    } catch (error) {
      if (isAgoraError(error) && error.httpStatus !== 500) return sendFailure(response, typeof error.httpStatus === 'number' ? error.httpStatus : 400, error.message);
      logger.error(`dashboard ${method} ${path}: ${describeError(error)}`);
      if (!response.headersSent) sendFailure(response, 500, 'Internal error');
    }
  }

  return {
    prefix: DASHBOARD_PATH,
    recorder,
    handle,
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
