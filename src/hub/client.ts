import { z } from 'zod';
import { AgoraError, isAgoraError } from '../errors.js';
import { CLIENT_DEFAULTS } from '../net/client.js';
import type { TokenSource } from '../net/token-source.js';
import { hashText } from '../protocol/document.js';
import { HubProtocols, type ProtocolHub } from '../sender/hub.js';
import type { UsageReport } from './usage.js';
import type { ChainBackend } from './chains.js';
import {
  agentProtocolSchema,
  agentRecordSchema,
  catalogueEntrySchema,
  chainRunSchema,
  type AgentRecord,
  type CatalogueEntry,
  type ChainRun,
} from './records.js';
import { roomEventOfFrame, type RoomEvent, type RoomRecord, type RoomRequest } from './rooms/records.js';
import type { RoomAction } from './rooms/rooms.js';
import type { RouteDecision } from './routing.js';

/** Options of {@link HubClient}. */
export type HubClientOptions = {
  /** The hub's base URL (required; the CLI reads `--hub` or `AGORA_HUB`). */
  url?: string;
  /** Bearer token for writes, `/runs`, `/metrics` and rooms (the CLI reads `--hub-token` or `AGORA_HUB_TOKEN`). */
  token?: string;
  /**
   * Where a renewed token comes from (`ClientCredentials`, resource: the hub's URL), sent to the hub only; wins over
   * `token` (the CLI's `--client-id`, `--client-secret`).
   */
  tokenSource?: TokenSource;
  /** Bound on each request (default 30 s; a room's event stream: until its headers). */
  timeoutMs?: number;
  fetch?: typeof fetch;
};

const matchSchema = z.object({ word: z.string(), field: z.string() });
const hitSchema = agentRecordSchema.extend({ score: z.number().optional(), matches: z.array(matchSchema).optional() });
const routeSchema = z.object({
  agent: agentRecordSchema,
  by: z.enum(['handoff', 'keyword', 'llm']),
  reason: z.string(),
  protocol: agentProtocolSchema.optional(),
  score: z.number().optional(),
  candidates: z.array(z.object({ id: z.string(), name: z.string(), score: z.number() })),
});
const listingSchema = catalogueEntrySchema.extend({
  score: z.number().optional(),
  servedBy: z.array(z.object({ id: z.string(), name: z.string(), url: z.string() })),
});

const roomSchema = z
  .object({
    id: z.string(),
    topic: z.string(),
    state: z.enum(['active', 'paused', 'completed', 'cancelled']),
    turns: z.number(),
  })
  .loose();
const roomEventSchema = z.object({
  id: z.number().int(),
  type: z.enum(['turn_notification', 'new_message', 'flow_completed', 'state']),
  data: z.record(z.string(), z.unknown()),
});

/** Options of {@link HubClient.watch}. */
export type RoomWatchOptions = {
  /** Events after this id only (a watcher that resumes). */
  lastEventId?: number;
  signal?: AbortSignal;
  /** Called when the stream dropped and is resumed after `lastEventId`. */
  onResume?: (lastEventId: number) => void;
  /** Reconnections at most before giving up (default 5). */
  maxResumes?: number;
};

/** A protocol in the hub's database, with the agents serving it. */
export type HubProtocol = z.infer<typeof listingSchema>;
/** An agent found at the hub, with its score when searched by words. */
export type HubAgent = z.infer<typeof hitSchema>;

/**
 * Talks to a hub over HTTP: the CLI commands and the sender use it; a chain runs through it.
 * @example const hub = new HubClient({ url: 'http://127.0.0.1:4000' }); const { agent, reason } = await hub.route('weather in Paris');
 */
export class HubClient extends HubProtocols implements ChainBackend, ProtocolHub {
  constructor(options: HubClientOptions = {}) {
    // The environment (AGORA_HUB, AGORA_HUB_TOKEN) is the CLI's to read, through its options.
    const { url, token, tokenSource, fetch } = options;
    if (!url) throw new AgoraError('BAD_REQUEST', 'No hub: pass --hub <url> or set AGORA_HUB');
    const timeoutMs = options.timeoutMs ?? CLIENT_DEFAULTS.timeoutMs;
    super({ url, token, tokenSource, fetch, timeoutMs, maxReplyBytes: CLIENT_DEFAULTS.maxReplyBytes });
  }

  /** Registers an agent by URL (the hub reads it); a name, description or capabilities given win over what it says of itself. */
  register(
    url: string,
    extra: { name?: string; description?: string; capabilities?: string[] } = {},
  ): Promise<AgentRecord> {
    return this.request('POST', '/agents', agentRecordSchema, { url, ...extra });
  }

  /** Searches the directory by words and/or protocol hash: agents that are up, or all of them (with their status) with `all`. */
  async agents(query: { q?: string; protocol?: string; limit?: number; all?: boolean } = {}): Promise<HubAgent[]> {
    const params = new URLSearchParams();
    if (query.q) params.set('q', query.q);
    if (query.protocol) params.set('protocol', query.protocol);
    if (query.limit) params.set('limit', String(query.limit));
    if (!query.all) params.set('status', 'up');
    return (await this.request('GET', `/agents?${params}`, z.object({ agents: z.array(hitSchema) }))).agents;
  }

  /** Removes an agent (token). */
  async removeAgent(id: string): Promise<void> {
    await this.request('DELETE', `/agents/${encodeURIComponent(id)}`, z.unknown());
  }

  /** Publishes a document to the protocol database (its hash computed here, checked there). */
  override publish(text: string): Promise<CatalogueEntry> {
    return this.request('POST', '/protocols', catalogueEntrySchema, { hash: hashText(text), text });
  }

  /** Searches the protocol database by words; all documents without a query. */
  override async protocols(query?: string, limit?: number): Promise<HubProtocol[]> {
    const params = new URLSearchParams();
    if (query) params.set('q', query);
    if (limit) params.set('limit', String(limit));
    return (await this.request('GET', `/protocols?${params}`, z.object({ protocols: z.array(listingSchema) })))
      .protocols;
  }

  /** Routes a goal (an explicit handoff wins). */
  async route(goal: string, handoff?: string): Promise<RouteDecision> {
    const params = new URLSearchParams({ goal });
    if (handoff) params.set('handoff', handoff);
    return (await this.request('GET', `/route?${params}`, routeSchema)) as RouteDecision;
  }

  /** Unfinished chains; all with `all`. */
  async runs(all = false): Promise<ChainRun[]> {
    return (await this.request('GET', `/runs${all ? '?all=true' : ''}`, z.object({ runs: z.array(chainRunSchema) })))
      .runs;
  }

  /** A chain's last checkpoint. */
  async getRun(id: string): Promise<ChainRun | undefined> {
    try {
      return await this.request('GET', `/runs/${encodeURIComponent(id)}`, chainRunSchema);
    } catch (error) {
      if (error instanceof AgoraError && error.status === 404) return undefined;
      throw error;
    }
  }

  /** Writes a chain's checkpoint. */
  async saveRun(run: ChainRun, leaseMs: number, force = false): Promise<void> {
    await this.request('PUT', `/runs/${encodeURIComponent(run.id)}`, z.unknown(), { run, leaseMs, force });
  }

  /** Reports queries' LLM spending (numbers only) for the hub's dashboard to draw (the admin scope, with tokens). */
  async reportUsage(reports: UsageReport | UsageReport[]): Promise<void> {
    await this.request('POST', '/usage', z.unknown(), Array.isArray(reports) ? { reports } : reports);
  }

  /** Asks the hub to pull its peers' catalogues now. */
  async sync(): Promise<unknown> {
    return this.request('POST', '/sync', z.unknown(), {});
  }

  /** Creates a room on the hub and starts it (token). */
  async createRoom(request: Partial<RoomRequest> & Pick<RoomRequest, 'topic' | 'participants'>): Promise<RoomRecord> {
    return (await this.request('POST', '/rooms', roomSchema, request)) as RoomRecord;
  }

  /** A room's record (token). */
  async room(id: string): Promise<RoomRecord> {
    return (await this.request('GET', `/rooms/${encodeURIComponent(id)}`, roomSchema)) as RoomRecord;
  }

  /** Pauses, resumes or cancels a room (token). */
  async control(id: string, action: RoomAction): Promise<RoomRecord> {
    return (await this.request('POST', `/rooms/${encodeURIComponent(id)}/control`, roomSchema, {
      action,
    })) as RoomRecord;
  }

  /** A person's message to a room, seen by every next turn (token). */
  async say(id: string, text: string, from?: string): Promise<RoomRecord> {
    return (await this.request('POST', `/rooms/${encodeURIComponent(id)}/messages`, roomSchema, {
      text,
      ...(from ? { from } : {}),
    })) as RoomRecord;
  }

  /**
   * A room's events as they happen, until it ends: a stream that drops is resumed after the last event seen (no
   * event lost or repeated), at most `maxResumes` times.
   */
  async *watch(id: string, options: RoomWatchOptions = {}): AsyncGenerator<RoomEvent> {
    let last = options.lastEventId ?? 0;
    const url = `${this.url}/rooms/${encodeURIComponent(id)}/events`;
    for (let attempt = 0; attempt <= (options.maxResumes ?? 5); attempt++) {
      if (attempt > 0) options.onResume?.(last);
      const headers: Record<string, string> = { accept: 'text/event-stream' };
      if (last) headers['last-event-id'] = String(last);
      let reply;
      try {
        reply = await this.client.request('GET', url, { headers, signal: options.signal, streams: true });
      } catch (error) {
        if (options.signal?.aborted) return;
        throw error;
      }
      if (reply.status !== 200 || !reply.body) {
        const message = /"error":"([^"]*)"/.exec(reply.bytes.toString('utf8'))?.[1] ?? 'no detail';
        throw new AgoraError(
          reply.status === 401 ? 'UNAUTHORIZED' : reply.status === 404 ? 'NOT_FOUND' : 'PEER_FAILURE',
          `GET ${url}: HTTP ${reply.status}: ${message}`,
          { status: reply.status },
        );
      }
      try {
        for await (const event of sseEvents(reply.body)) {
          // The hub sends ARP's frames (`hello` and heartbeats carry no id and are left out).
          const room =
            typeof event.data === 'object' && event.data !== null
              ? roomEventOfFrame(event.data as Record<string, unknown>)
              : undefined;
          const parsed = roomEventSchema.safeParse(room ?? event);
          if (!parsed.success) continue;
          last = parsed.data.id;
          yield parsed.data;
          if (parsed.data.type === 'flow_completed') return;
        }
        return;
      } catch (error) {
        if (options.signal?.aborted) return;
        if (isAgoraError(error)) throw error;
      }
    }
  }
}

/** The events of an SSE body (comments and events without an id left out), each with its JSON data parsed. */
async function* sseEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<{ id: number; type: string; data: unknown }> {
  let text = '';
  for await (const chunk of body.pipeThrough(new TextDecoderStream())) {
    text += chunk;
    const blocks = text.split('\n\n');
    text = blocks.pop() ?? '';
    for (const block of blocks) {
      const fields = new Map<string, string>();
      for (const line of block.split('\n')) {
        const colon = line.indexOf(':');
        if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).trimStart());
      }
      const id = fields.get('id');
      if (id === undefined || !/^\d{1,15}$/.test(id)) continue;
      let data: unknown;
      try {
        data = JSON.parse(fields.get('data') ?? '');
      } catch {
        continue;
      }
      yield { id: Number(id), type: fields.get('event') ?? 'message', data };
    }
  }
}
