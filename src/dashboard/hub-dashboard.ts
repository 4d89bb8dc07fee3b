// `GET /dashboard` on a hub, as a mount: registered agents up or down with their protocols, the protocol catalogue,
// the cost per query agents report, chains with their hops, and rooms (when the hub has them), kept live by
// server-sent events. Declared public to the edge: the dashboard applies its own access rule (see access.ts) after
// the edge's guard.
import { describeError } from '../errors.js';
import { sseFrame } from '../edge/events.js';
import type { Mount, MountedRequest, MountRoute } from '../edge/mount.js';
import type { EdgeResponse } from '../edge/response.js';
import type { Hub } from '../hub/hub.js';
import type { ChainRun } from '../hub/records.js';
import { consoleLogger, type Logger } from '../log.js';
import { DashboardAccess, type AccessKind } from './access.js';
import { AssetServer, EventFeeds, redirectToFolder, sendFailure, sendJson, sendRefusal, subPath } from './_http.js';
import type { Rooms } from '../hub/rooms/rooms.js';
import { DASHBOARD_PATH } from './agent-dashboard.js';
import { DEFAULT_COST_WINDOW, usageView } from './hub-usage.js';

/** The hub dashboard's route: read-only, public to the edge, which leaves the access rule to the dashboard. */
export const HUB_DASHBOARD_ROUTES: readonly MountRoute[] = [
  { path: DASHBOARD_PATH, prefix: true, public: true, allow: 'GET, HEAD, OPTIONS' },
];

/** One room as the hub dashboard shows it: who is in it, and the latest lines of its transcript. */
export type RoomView = {
  id: string;
  name: string;
  members: string[];
  transcript: { at: number; from: string; text: string }[];
};

/**
 * Where the hub dashboard's rooms come from ({@link roomsSource} for the hub's own): it lists what this returns and
 * re-reads it on every push. Without one the page says rooms are not available on this hub.
 */
export type RoomsSource = { rooms(): Promise<RoomView[]> };

/**
 * The hub's open rooms as the dashboard shows them (topic, state and turn; members, dropped ones marked; transcript).
 */
export function roomsSource(rooms: Rooms): RoomsSource {
  return {
    rooms: async () =>
      (await rooms.open()).map((room) => ({
        id: room.id,
        name: `${room.topic} (${room.state}, turn ${room.turns}/${room.maxTurns})`,
        members: room.participants.map((participant) =>
          participant.dropped ? `${participant.name} (dropped)` : participant.name,
        ),
        transcript: room.transcript.map((entry) => ({
          at: entry.at,
          from:
            entry.kind === 'skipped'
              ? `${entry.speaker} (skipped)`
              : entry.kind === 'person'
                ? `${entry.speaker} (person)`
                : entry.speaker,
          kind: entry.kind,
          text: entry.text,
        })),
      })),
  };
}

/** Options of {@link createHubDashboard}. */
export type HubDashboardOptions = {
  /** The hub's bearer tokens (see the README's token rules). */
  tokens?: readonly string[];
  /** Whether the hub's edge takes OAuth access tokens (its guard verifies them; the page signs in with one). */
  oauth?: boolean;
  /** Where rooms come from (see {@link RoomsSource}); absent: no rooms panel data. */
  rooms?: RoomsSource;
  /** The Cost panel's moving average, in queries (default 100). */
  costWindow?: number;
  /** How often the hub's state is compared with the last push, in ms (default 1000; only while a page is open). */
  checkMs?: number;
  logger?: Pick<Logger, 'error'>;
};

// Bounds on what one page shows: a hub may know thousands of agents, a chain's results come from peers.
const MAX_AGENTS = 500;
const MAX_DOCUMENTS = 200;
const MAX_CHAINS = 50;
const MAX_RESULT_CHARS = 500;
const MAX_TRANSCRIPT = 50;

function preview(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > MAX_RESULT_CHARS ? `${text.slice(0, MAX_RESULT_CHARS - 1)}…` : text;
}

function chainView(run: ChainRun) {
  // The waterfall's scale: from the chain's start to its last hop's end.
  const spanMs = Math.max(1, ...run.hops.map((hop) => hop.finishedAt - run.createdAt));
  return {
    spanMs,
    id: run.id,
    goal: preview(run.goal),
    status: run.status,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
    error: run.error,
    hops: run.hops.map((hop) => ({
      agentName: hop.agentName,
      url: hop.url,
      by: hop.by,
      reason: preview(hop.reason),
      ok: hop.ok,
      result: preview(hop.result),
      error: preview(hop.error),
      ms: hop.finishedAt - hop.startedAt,
      offsetMs: Math.max(0, hop.startedAt - run.createdAt),
      // What the agent reported of its LLM's turn (counts and model, never text); null when it reported nothing.
      usage: hop.usage ?? null,
    })),
  };
}

/**
 * The hub's dashboard as a mount: `startHub({ mounts: (hub, rooms) => [createHubDashboard(hub)] })` (what `agora hub`
 * does).
 * @example
 * await startHub({
 *   port: 4000,
 *   mounts: (hub, rooms) => [createHubDashboard(hub, { tokens, ...(rooms ? { rooms: roomsSource(rooms) } : {}) })],
 * });
 */
export function createHubDashboard(hub: Hub, options: HubDashboardOptions = {}): Mount {
  const logger = options.logger ?? consoleLogger('agora-hub');
  const access = new DashboardAccess(options.tokens ?? [], undefined, options.oauth);
  const assets = new AssetServer();
  const feeds = new EventFeeds();
  let last = '';
  let lastFrame: string | undefined;
  let timer: NodeJS.Timeout | undefined;

  async function state() {
    const [agents, catalogue, runs, rooms] = await Promise.all([
      hub.agents({ includeDown: true, limit: MAX_AGENTS }),
      hub.protocols(undefined, MAX_DOCUMENTS),
      hub.runs(true),
      options.rooms ? options.rooms.rooms() : Promise.resolve(null),
    ]);
    return {
      agents: agents.map((agent) => ({
        id: agent.id,
        name: agent.name,
        url: agent.url,
        kind: agent.kind,
        status: agent.status,
        lastSeen: agent.lastSeen,
        lastError: agent.lastError,
        protocols: agent.protocols.map((protocol) => ({ name: protocol.name, hash: protocol.hash })),
      })),
      catalogue: catalogue.map((entry) => ({
        name: entry.name,
        hash: entry.hash,
        description: entry.description,
        servedBy: entry.servedBy.map((agent) => agent.name),
      })),
      chains: runs
        .sort((a, b) => b.updatedAt - a.updatedAt)
        .slice(0, MAX_CHAINS)
        .map(chainView),
      rooms:
        rooms?.map((room) => ({
          ...room,
          transcript: room.transcript
            .slice(-MAX_TRANSCRIPT)
            .map((line) => ({ ...line, text: preview(line.text) ?? '' })),
        })) ?? null,
      usage: usageView(hub.usage, options.costWindow ?? DEFAULT_COST_WINDOW),
    };
  }

  // The state as JSON, read once for every feed that asks at the same time (pages opening together): it can be
  // megabytes, and each copy counts.
  let reading: Promise<string> | undefined;
  function snapshot(): Promise<string> {
    reading ??= state()
      .then((current) => JSON.stringify(current))
      .finally(() => (reading = undefined));
    return reading;
  }

  // The hub has no event bus: while a page is open, its state is read once a second and pushed when it changed.
  async function check(): Promise<void> {
    try {
      const text = await snapshot();
      if (text !== last) {
        last = text;
        feeds.sendJson('state', text);
      }
    } catch (error) {
      logger.error(`hub dashboard: ${describeError(error)}`);
    }
  }

  function feedClosed(): void {
    if (feeds.size === 0 && timer) {
      clearInterval(timer);
      timer = undefined;
    }
  }

  async function handle(request: MountedRequest): Promise<EdgeResponse> {
    const url = request.path;
    if (!url.startsWith(`${DASHBOARD_PATH}/`)) return redirectToFolder();
    const path = subPath(url, DASHBOARD_PATH);
    const { method } = request;
    const kind: AccessKind =
      path === '/api/access' ? 'page' : path.startsWith('/api/') || path === '/events' ? 'read' : 'page';
    const refusal = access.check(request, kind);
    if (refusal) return sendRefusal(refusal, kind);
    if (method !== 'GET' && method !== 'HEAD') return sendFailure(405, 'Method not allowed', { allow: 'GET, HEAD' });
    if (path === '/api/access') return sendJson(200, { tokens: access.tokensEnabled });
    if (kind === 'page') {
      const name = path === '/' ? 'hub.html' : path.startsWith('/assets/') ? path.slice(8) : '';
      return (await assets.answer(name)) ?? sendFailure(404, 'Not found');
    }
    if (path === '/api/state') return sendJson(200, { ...(await state()), tokens: access.tokensEnabled });
    if (path === '/events') {
      const text = await snapshot();
      // One frame for pages opening together: the same string, not a copy each.
      if (text !== last || lastFrame === undefined) {
        last = text;
        lastFrame = sseFrame('state', text);
      }
      const opened = feeds.open([lastFrame], feedClosed);
      if (feeds.size > 0) timer ??= setInterval(() => void check(), options.checkMs ?? 1000).unref();
      return opened;
    }
    return sendFailure(404, 'Not found');
  }

  return {
    name: 'dashboard',
    routes: HUB_DASHBOARD_ROUTES,
    handle,
    failure: (status, message) => sendFailure(status, message),
    close() {
      if (timer) clearInterval(timer);
      timer = undefined;
      feeds.close();
    },
  };
}
