import { randomUUID } from 'node:crypto';
import { describeError } from '../errors.js';
import type { LanguageModel } from '../llm/model.js';
import { silentLogger, type Logger } from '../log.js';
import type { TokenSource } from '../net/token-source.js';
import { Catalogue, type CatalogueHit, type SyncReport } from './catalogue.js';
import type { ChainBackend } from './chains.js';
import { Directory, type AgentHit, type AgentPage, type AgentQuery, type Registration } from './directory.js';
import type { ReadOptions } from './read-agent.js';
import { hubLimits, HUB_DEFAULTS, type HubLimits } from './defaults.js';
import type { AgentRecord, CatalogueEntry, ChainRun } from './records.js';
import { Router, type RouteDecision } from './routing.js';
import { ChainRuns } from './runs.js';
import { MemoryHubStore, type HubStore } from './store.js';
import { UsageLog } from './usage.js';

/** Options of {@link Hub}; each one left out takes its value in {@link HUB_DEFAULTS}. */
export type HubOptions = Pick<ReadOptions, 'timeoutMs' | 'lookup' | 'maxProtocols'> & {
  /** Where everything lives (default: this process's memory; `RedisHubStore` to share and keep it). */
  store?: HubStore;
  /** Routes goals that keywords leave tied or unmatched. */
  llm?: LanguageModel;
  /** Register agents (and sync peers) on loopback and private networks (the SSRF rule of protocol sources lifted). */
  allowPrivateAgents?: boolean;
  /** Agents held at most (0 holds none: every registration is refused). */
  maxAgents?: number;
  /** Protocol documents held at most. */
  maxDocuments?: number;
  /** Largest protocol document, in bytes. */
  maxDocumentBytes?: number;
  /** New protocol documents one client may add, per hub process (`--max-documents-per-client`). */
  maxDocumentsPerClient?: number;
  /** An agent down and unseen this long is removed (`--remove-down-after`). */
  removeDownAfterMs?: number;
  /** Chains kept at most; the oldest finished ones make room. */
  maxRuns?: number;
  /** Largest chain checkpoint, in bytes (`--max-run-bytes`). */
  maxRunBytes?: number;
  /** All checkpoints together, in bytes (`--max-runs-bytes`); the oldest finished ones make room. */
  maxRunsBytes?: number;
  /** Time between two checks of an agent (`--check-interval`). */
  checkIntervalMs?: number;
  /** Consecutive failed checks before an agent is marked down. */
  maxMissedChecks?: number;
  /**
   * The hub's own client credentials for the requests it makes to agents (room turns, chains run in this process): a
   * `ClientCredentials` with `resource: originResource`, each agent's origin its token's audience. Documented in
   * docs/operations.md (`agora hub --client-id`).
   */
  tokenSource?: TokenSource;
  /** Hubs whose catalogues this one pulls (`agora hub --peer`). */
  peers?: string[];
  /** Time between two pulls of each peer. */
  syncIntervalMs?: number;
  /** Usage reports kept per series, in this process's memory (`--usage-reports`; 0: none are taken). */
  maxUsageReports?: number;
  now?: () => number;
  logger?: Logger;
};

/** The first `max` agents serving a protocol, without walking all of them. */
function firstServing(
  ids: Iterable<string> | undefined,
  records: ReadonlyMap<string, AgentRecord>,
  max: number,
): { id: string; name: string; url: string }[] {
  const serving: { id: string; name: string; url: string }[] = [];
  for (const id of ids ?? []) {
    if (serving.length >= max) break;
    const record = records.get(id);
    if (record) serving.push({ id, name: record.name, url: record.url });
  }
  return serving;
}

/** A catalogue entry with the registered agents serving it. */
export type ProtocolListing = CatalogueHit & { servedBy: { id: string; name: string; url: string }[] };

/**
 * The hub: a directory of agents, a protocol database, routing and chain checkpoints, all state in its store. Its
 * HTTP mount (`hubMount`) and its rooms call these methods only. Knows nothing of HTTP.
 * @example const hub = new Hub({ allowPrivateAgents: true }); await hub.register({ url });
 */
export class Hub implements ChainBackend {
  readonly store: HubStore;
  readonly catalogue: Catalogue;
  readonly directory: Directory;
  readonly router: Router;
  /** What agents report of their LLM spending per query (`POST /usage`), which the dashboard draws. */
  readonly usage: UsageLog;
  readonly logger: Logger;
  readonly #options: HubOptions;
  readonly #limits: HubLimits;
  readonly #runs: ChainRuns;
  readonly #now: () => number;
  readonly #owner = randomUUID();
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;
  #lastSync = new Map<string, number>();

  constructor(options: HubOptions = {}) {
    this.#options = options;
    this.#limits = hubLimits(options);
    this.#now = options.now ?? Date.now;
    this.logger = options.logger ?? silentLogger;
    this.store = options.store ?? new MemoryHubStore({ now: this.#now });
    const { maxDocuments, maxDocumentBytes, maxDocumentsPerClient } = this.#limits;
    this.catalogue = new Catalogue({
      store: this.store,
      now: this.#now,
      logger: this.logger,
      maxDocuments,
      maxDocumentBytes,
      maxDocumentsPerClient,
    });
    const { maxAgents, checkIntervalMs, maxMissedChecks, removeDownAfterMs } = this.#limits;
    this.directory = new Directory({
      ...this.#readOptions(),
      store: this.store,
      catalogue: this.catalogue,
      now: this.#now,
      logger: this.logger,
      maxAgents,
      checkIntervalMs,
      maxMissedChecks,
      removeDownAfterMs,
    });
    this.router = new Router({ directory: this.directory, logger: this.logger, llm: options.llm });
    this.#runs = new ChainRuns(this.store, this.#limits);
    this.usage = new UsageLog({
      maxReports: options.maxUsageReports ?? HUB_DEFAULTS.maxUsageReports,
      now: this.#now,
    });
  }

  #readOptions(): ReadOptions {
    const { timeoutMs, lookup, maxProtocols } = this.#options;
    return { allowPrivateSources: this.allowsPrivateAgents, timeoutMs, lookup, maxProtocols };
  }

  /** The hub's own credentials for its requests to agents, if any (the chains' and rooms' default). */
  get tokenSource(): TokenSource | undefined {
    return this.#options.tokenSource;
  }

  /** Whether agents (and room participants) on loopback and private networks are accepted. */
  get allowsPrivateAgents(): boolean {
    return this.#options.allowPrivateAgents ?? HUB_DEFAULTS.allowPrivateAgents;
  }

  /** Registers (or re-reads) an agent by URL. */
  register(registration: Registration): Promise<AgentRecord> {
    return this.directory.register(registration);
  }

  /** Removes an agent from the directory; false when it was not registered. */
  removeAgent(id: string): Promise<boolean> {
    return this.directory.remove(id);
  }

  /** An agent by id, URL or directory name (an up agent first when several share the name). */
  agent(target: string): Promise<AgentRecord | undefined> {
    return this.directory.resolve(target);
  }

  /** Searches the directory. */
  agents(query: AgentQuery = {}): Promise<AgentHit[]> {
    return this.directory.search(query);
  }

  /** A page of the directory, with the listing's total (see {@link Directory.page}). */
  agentPage(query: AgentQuery = {}): Promise<AgentPage> {
    return this.directory.page(query);
  }

  /** The agents held, up and down, as every process sharing the store now sees them. */
  async agentCounts(): Promise<{ up: number; down: number }> {
    await this.directory.refresh();
    return this.directory.counts;
  }

  /** Routes a goal (an explicit handoff wins). */
  route(goal: string, handoff?: string): Promise<RouteDecision> {
    return this.router.route(goal, handoff === undefined ? {} : { handoff });
  }

  /** Adds a protocol document by its hash and exact text (checked), counted against `client`'s quota when given. */
  publish(hash: unknown, text: unknown, client?: string): Promise<CatalogueEntry> {
    return this.catalogue.publish(hash, text, client);
  }

  /** Searches the protocol database; each document lists the registered agents serving it. */
  async protocols(query?: string, limit = 50): Promise<ProtocolListing[]> {
    return (await this.protocolPage(query, limit)).protocols;
  }

  /**
   * A page of the protocol database (ranked by `query`, else by name with the total), each document with who
   * serves it.
   */
  async protocolPage(
    query?: string,
    limit = 50,
    offset = 0,
  ): Promise<{ protocols: ProtocolListing[]; total?: number }> {
    const { protocols: hits, total } = await this.catalogue.page(query, limit, offset);
    await this.directory.refresh();
    const { records, servingOf } = this.directory.view;
    const protocols = hits.map((hit) => ({
      ...hit,
      servedBy: firstServing(servingOf(hit.hash), records, 50),
    }));
    return { protocols, ...(total !== undefined ? { total } : {}) };
  }

  /** A protocol document's text from the database, by its hash (hex or base64). */
  protocolText(hash: string): Promise<string | undefined> {
    return this.catalogue.text(hash);
  }

  /**
   * Writes a chain's checkpoint; refused while another process holds the chain (unless `force`), when too large,
   * or when full.
   */
  saveRun(run: ChainRun, leaseMs: number = HUB_DEFAULTS.runLeaseMs, force = false): Promise<void> {
    return this.#runs.save(run, leaseMs, force);
  }

  /**
   * Deletes a chain's checkpoint; refused, as {@link saveRun} is, while another process holds the chain, unless
   * `owner` is that process or `force` takes it over.
   */
  deleteRun(id: string, owner?: string, force = false): Promise<void> {
    return this.#runs.delete(id, owner, force);
  }

  /** A chain's last checkpoint. */
  getRun(id: string): Promise<ChainRun | undefined> {
    return this.#runs.get(id);
  }

  /** Unfinished chains (running, failed, capped), newest first; all of them with `all`. */
  runs(all = false): Promise<ChainRun[]> {
    return this.#runs.list(all);
  }

  /** Pulls every peer's catalogue now. */
  async syncPeers(): Promise<SyncReport[]> {
    const reports: SyncReport[] = [];
    for (const peer of this.#options.peers ?? []) {
      try {
        const report = await this.catalogue.syncFrom(peer, { ...this.#readOptions(), logger: this.logger });
        this.#lastSync.set(peer, this.#now());
        if (report.added || report.refused.length)
          this.logger.info(
            `hub sync from ${peer}: ${report.added} added, ${report.known} known, ${report.refused.length} refused`,
          );
        reports.push(report);
      } catch (error) {
        this.logger.warn(`hub sync from ${peer}: ${describeError(error)}`);
        reports.push({
          peer,
          added: 0,
          known: 0,
          refused: [{ hash: '', reason: error instanceof Error ? error.message : String(error) }],
        });
      }
    }
    return reports;
  }

  /** One round of background work: the agents whose check is due, the peers whose sync is due. */
  async tick(): Promise<void> {
    try {
      await this.directory.checkDue(this.#owner);
      const interval = this.#limits.syncIntervalMs;
      if ((this.#options.peers ?? []).some((peer) => (this.#lastSync.get(peer) ?? -Infinity) + interval <= this.#now()))
        await this.syncPeers();
    } catch (error) {
      this.logger.warn(`hub background work: ${describeError(error)}`);
    }
  }

  /** Runs {@link tick} every `everyMs` (default 5 s) until {@link close}; rounds never overlap. */
  startBackground(everyMs: number = HUB_DEFAULTS.tickMs): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      if (this.#ticking === undefined) this.#ticking = this.tick().finally(() => (this.#ticking = undefined));
    }, everyMs);
    this.#timer.unref();
  }

  /** Stops background work and closes the store. */
  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#ticking;
    await this.store.close();
  }
}
