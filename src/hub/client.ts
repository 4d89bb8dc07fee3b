import { z } from 'zod';
import { AgoraError, describeError, isAgoraError } from '../errors.js';
import { hashText } from '../protocol/document.js';
import { downloadVerified, type ProtocolHub } from '../sender/hub.js';
import { MAX_REPLY_BYTES, readCapped } from '../sender/transport.js';
import type { ChainBackend } from './chains.js';
import { agentProtocolSchema, agentRecordSchema, catalogueEntrySchema, chainRunSchema, type AgentRecord, type CatalogueEntry, type ChainRun } from './records.js';
import type { RouteDecision } from './routing.js';

/** Options of {@link HubClient}. */
export type HubClientOptions = {
  /** The hub's base URL (default: `AGORA_HUB`). */
  url?: string;
  /** Bearer token for writes, `/runs` and `/metrics` (default: `AGORA_HUB_TOKEN`). */
  token?: string;
  /** Bound on each request (default 30 s). */
  timeoutMs?: number;
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
const failureSchema = z.object({ error: z.string() }).loose();

/** A protocol in the hub's database, with the agents serving it. */
export type HubProtocol = z.infer<typeof listingSchema>;
/** An agent found at the hub, with its score when searched by words. */
export type HubAgent = z.infer<typeof hitSchema>;

/**
 * Talks to a hub over HTTP: the CLI commands and the sender use it; a chain runs through it.
 * @example const hub = new HubClient({ url: 'http://127.0.0.1:4000' }); const { agent, reason } = await hub.route('weather in Paris');
 */
export class HubClient implements ChainBackend, ProtocolHub {
  readonly url: string;
  readonly #token: string | undefined;
  readonly #timeoutMs: number;

  constructor(options: HubClientOptions = {}) {
    const url = options.url ?? process.env.AGORA_HUB;
    if (!url) throw new AgoraError('BAD_REQUEST', 'No hub: pass --hub <url> or set AGORA_HUB');
    this.url = url.replace(/\/+$/, '');
    this.#token = options.token ?? (process.env.AGORA_HUB_TOKEN || undefined);
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  async #request<T>(method: string, path: string, schema: z.ZodType<T>, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    let response: Response;
    try {
      response = await fetch(`${this.url}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}), signal: AbortSignal.timeout(this.#timeoutMs) });
    } catch (error) {
      throw new AgoraError('PEER_FAILURE', `${method} ${this.url}${path} failed: ${error instanceof Error && error.name === 'TimeoutError' ? `no answer within ${this.#timeoutMs} ms` : describeError(error)}`, { cause: error });
    }
    let text: string;
    try {
      text = (await readCapped(response, MAX_REPLY_BYTES, `${method} ${this.url}${path}`)).toString('utf8');
    } catch (error) {
      if (isAgoraError(error)) throw error;
      throw new AgoraError('PEER_FAILURE', `${method} ${this.url}${path}: ${error instanceof Error && error.name === 'TimeoutError' ? `no whole answer within ${this.#timeoutMs} ms` : describeError(error)}`, { cause: error });
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new AgoraError('PEER_FAILURE', `${method} ${this.url}${path}: HTTP ${response.status}, not JSON`, { status: response.status });
    }
    if (!response.ok) {
      const message = failureSchema.safeParse(json).data?.error ?? `HTTP ${response.status}`;
      const code = response.status === 404 ? 'NOT_FOUND' : response.status === 401 ? 'UNAUTHORIZED' : response.status < 500 ? 'BAD_REQUEST' : 'PEER_FAILURE';
      throw new AgoraError(code, `${message} (${method} ${this.url}${path}: HTTP ${response.status})`, { status: response.status });
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) throw new AgoraError('PEER_FAILURE', `${method} ${this.url}${path}: unexpected reply: ${z.prettifyError(parsed.error).split('\n')[0]}`);
    return parsed.data;
  }

  /** Registers an agent by URL (the hub reads it). */
  register(url: string, extra: { name?: string; description?: string } = {}): Promise<AgentRecord> {
    return this.#request('POST', '/agents', agentRecordSchema, { url, ...extra });
  }

  /** Searches the directory by words and/or protocol hash. */
  async agents(query: { q?: string; protocol?: string; limit?: number; all?: boolean } = {}): Promise<HubAgent[]> {
    const params = new URLSearchParams();
    if (query.q) params.set('q', query.q);
    if (query.protocol) params.set('protocol', query.protocol);
    if (query.limit) params.set('limit', String(query.limit));
    if (query.all) params.set('all', 'true');
    return (await this.#request('GET', `/agents?${params}`, z.object({ agents: z.array(hitSchema) }))).agents;
  }

  /** Removes an agent (token). */
  async removeAgent(id: string): Promise<void> {
    await this.#request('DELETE', `/agents/${encodeURIComponent(id)}`, z.unknown());
  }

  /** Publishes a document to the protocol database (its hash computed here, checked there). */
  publish(text: string): Promise<CatalogueEntry> {
    return this.#request('POST', '/protocols', catalogueEntrySchema, { hash: hashText(text), text });
  }

  /** Searches the protocol database by words; all documents without a query. */
  async protocols(query?: string, limit?: number): Promise<HubProtocol[]> {
    const params = new URLSearchParams();
    if (query) params.set('q', query);
    if (limit) params.set('limit', String(limit));
    return (await this.#request('GET', `/protocols?${params}`, z.object({ protocols: z.array(listingSchema) }))).protocols;
  }

  /** The exact text of a document, verified by hash here too; undefined when the hub lacks it. */
  protocolText(hash: string): Promise<string | undefined> {
    return downloadVerified(fetch, this.url, hash, this.#timeoutMs);
  }

  /** Routes a goal (an explicit handoff wins). */
  async route(goal: string, handoff?: string): Promise<RouteDecision> {
    const params = new URLSearchParams({ goal });
    if (handoff) params.set('handoff', handoff);
    return (await this.#request('GET', `/route?${params}`, routeSchema)) as RouteDecision;
  }

  /** Unfinished chains; all with `all`. */
  async runs(all = false): Promise<ChainRun[]> {
    return (await this.#request('GET', `/runs${all ? '?all=true' : ''}`, z.object({ runs: z.array(chainRunSchema) }))).runs;
  }

  /** A chain's last checkpoint. */
  async getRun(id: string): Promise<ChainRun | undefined> {
    try {
      return await this.#request('GET', `/runs/${encodeURIComponent(id)}`, chainRunSchema);
    } catch (error) {
      if (error instanceof AgoraError && error.status === 404) return undefined;
      throw error;
    }
  }

  /** Writes a chain's checkpoint. */
  async saveRun(run: ChainRun, leaseMs: number, force = false): Promise<void> {
    await this.#request('PUT', `/runs/${encodeURIComponent(run.id)}`, z.unknown(), { run, leaseMs, force });
  }

  /** Asks the hub to pull its peers' catalogues now. */
  async sync(): Promise<unknown> {
    return this.#request('POST', '/sync', z.unknown(), {});
  }
}
