import { randomUUID } from 'node:crypto';
import { AgoraError, describeError } from '../errors.js';
import type { LanguageModel } from '../llm/toolformer.js';
import { silentLogger, type Logger } from '../log.js';
import { Catalogue, type CatalogueHit, type SyncReport } from './catalogue.js';
import type { ChainBackend } from './chains.js';
import { Directory, type AgentHit, type AgentPage, type AgentQuery, type Registration } from './directory.js';
import type { ReadOptions } from './read-agent.js';
import { chainRunSchema, type AgentRecord, type ChainRun } from './records.js';
import { Router, type RouteDecision } from './routing.js';
import { MemoryHubStore, type HubStore } from './store.js';

/** The default of {@link HubOptions.maxRunBytes}: 256 KiB. */
export const DEFAULT_MAX_RUN_BYTES = 256 * 1024;
/** The default of {@link HubOptions.maxRunsBytes}: 64 MiB. */
export const DEFAULT_MAX_RUNS_BYTES = 64 * 1024 * 1024;

const MAX_RUN_TEXT = 2000;

/** A checkpoint with its free texts (errors, reasons) cut, so what pages show stays small. */
function cutRun(run: ChainRun): ChainRun {
  const cut = (text: string | undefined) => (text === undefined ? undefined : text.slice(0, MAX_RUN_TEXT));
  return {
    ...run,
    goal: run.goal.slice(0, MAX_RUN_TEXT),
    ...(run.error !== undefined ? { error: cut(run.error)! } : {}),
    hops: run.hops.map((hop) => ({
      ...hop,
      reason: cut(hop.reason)!,
      ...(hop.error !== undefined ? { error: cut(hop.error)! } : {}),
    })),
  };
}

/** Options of {@link Hub}. */
export type HubOptions = Pick<ReadOptions, 'timeoutMs' | 'lookup' | 'maxProtocols'> & {
  /** Where everything lives (default: this process's memory; `RedisHubStore` to share and keep it). */
  store?: HubStore;
  /** Routes goals that keywords leave tied or unmatched. */
  llm?: LanguageModel;
  /** Register agents (and sync peers) on loopback and private networks (default false: the SSRF rule of protocol sources). */
  allowPrivateAgents?: boolean;
  /** Agents held at most (default 10,000; 0 holds none: every registration is refused). */
  maxAgents?: number;
  /** Protocol documents held at most (default 10,000). */
  maxDocuments?: number;
  /** Largest protocol document, in bytes (default 64 KiB). */
  maxDocumentBytes?: number;
  /** New protocol documents one client may add, per hub process (default 500; `--max-documents-per-client`). */
  maxDocumentsPerClient?: number;
  /** An agent down and unseen this long is removed (default 7 days; `--remove-down-after`). */
  removeDownAfterMs?: number;
  /** Chains kept at most (default 10,000); the oldest finished ones make room. */
  maxRuns?: number;
  /** Largest chain checkpoint, in bytes (default 256 KiB; `--max-run-bytes`). */
  maxRunBytes?: number;
  /** All checkpoints together, in bytes (default 64 MiB; `--max-runs-bytes`); the oldest finished ones make room. */
  maxRunsBytes?: number;
  checkIntervalMs?: number;
  maxMissedChecks?: number;
  /** Hubs whose catalogues this one pulls (`agora hub --peer`). */
  peers?: string[];
  /** Time between two pulls of each peer (default 5 min). */
  syncIntervalMs?: number;
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
 * The hub: a directory of agents, a protocol database, routing and chain checkpoints, all state in its store.
 * Knows nothing of HTTP (see `createHubHandler`).
 * @example const hub = new Hub({ allowPrivateAgents: true }); await hub.directory.register({ url });
 */
export class Hub implements ChainBackend {
  readonly store: HubStore;
  readonly catalogue: Catalogue;
  readonly directory: Directory;
  readonly router: Router;
  readonly logger: Logger;
  readonly #options: HubOptions;
  readonly #now: () => number;
  readonly #owner = randomUUID();
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;
  #lastSync = new Map<string, number>();

  constructor(options: HubOptions = {}) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.logger = options.logger ?? silentLogger;
    this.store = options.store ?? new MemoryHubStore({ now: this.#now });
    this.catalogue = new Catalogue({
      store: this.store,
      now: this.#now,
      logger: this.logger,
      ...(options.maxDocuments ? { maxDocuments: options.maxDocuments } : {}),
      ...(options.maxDocumentBytes ? { maxDocumentBytes: options.maxDocumentBytes } : {}),
      ...(options.maxDocumentsPerClient ? { maxDocumentsPerClient: options.maxDocumentsPerClient } : {}),
    });
    this.directory = new Directory({
      ...this.#readOptions(),
      store: this.store,
      catalogue: this.catalogue,
      now: this.#now,
      logger: this.logger,
      maxAgents: options.maxAgents,
      ...(options.checkIntervalMs ? { checkIntervalMs: options.checkIntervalMs } : {}),
      ...(options.maxMissedChecks ? { maxMissedChecks: options.maxMissedChecks } : {}),
      ...(options.removeDownAfterMs ? { removeDownAfterMs: options.removeDownAfterMs } : {}),
    });
    this.router = new Router({
      directory: this.directory,
      logger: this.logger,
      ...(options.llm ? { llm: options.llm } : {}),
    });
  }

  #readOptions(): ReadOptions {
    const { timeoutMs, lookup, maxProtocols, allowPrivateAgents } = this.#options;
    return {
      allowPrivateSources: allowPrivateAgents === true,
      ...(timeoutMs ? { timeoutMs } : {}),
      ...(lookup ? { lookup } : {}),
      ...(maxProtocols ? { maxProtocols } : {}),
    };
  }

  /** Whether agents (and room participants) on loopback and private networks are accepted. */
  get allowsPrivateAgents(): boolean {
    return this.#options.allowPrivateAgents === true;
  }

  /** Registers (or re-reads) an agent by URL. */
  register(registration: Registration): Promise<AgentRecord> {
    return this.directory.register(registration);
  }

  /** Searches the directory. */
  agents(query: AgentQuery = {}): Promise<AgentHit[]> {
    return this.directory.search(query);
  }

  /** A page of the directory, with the listing's total (see {@link Directory.page}). */
  agentPage(query: AgentQuery = {}): Promise<AgentPage> {
    return this.directory.page(query);
  }

  /** Routes a goal (an explicit handoff wins). */
  route(goal: string, handoff?: string): Promise<RouteDecision> {
    return this.router.route(goal, handoff === undefined ? {} : { handoff });
  }

  /** Searches the protocol database; each document lists the registered agents serving it. */
  async protocols(query?: string, limit = 50): Promise<ProtocolListing[]> {
    return (await this.protocolPage(query, limit)).protocols;
  }

  /** A page of the protocol database (ranked by `query`, else by name with the total), each document with who serves it. */
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

  /** Writes a chain's checkpoint; refused while another process holds the chain (unless `force`), when too large, or when full. */
  async saveRun(raw: ChainRun, leaseMs: number, force = false): Promise<void> {
    const parsed = chainRunSchema.safeParse(raw);
    if (!parsed.success)
      throw new AgoraError('BAD_REQUEST', `Not a chain checkpoint: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const run = cutRun(parsed.data);
    if (!/^[\w-]{1,64}$/.test(run.id))
      throw new AgoraError('BAD_REQUEST', 'Chain id must be 1-64 letters, digits, - or _');
    const size = Buffer.byteLength(JSON.stringify(run));
    const maxRunBytes = this.#options.maxRunBytes ?? DEFAULT_MAX_RUN_BYTES;
    if (size > maxRunBytes)
      throw new AgoraError(
        'REQUEST_TOO_LARGE',
        `Chain ${run.id}'s checkpoint is ${size} bytes; this hub keeps at most ${maxRunBytes} (--max-run-bytes)`,
      );
    const key = `run:${run.id}`;
    const lease = Math.max(1000, Math.min(leaseMs, 24 * 60 * 60 * 1000));
    const previous = await this.store.getRun(run.id);
    if (force) await this.store.release(key, previous?.owner ?? '');
    if (!(await this.store.claim(key, run.owner, lease))) {
      const held = await this.store.getRun(run.id);
      throw new AgoraError(
        'BAD_REQUEST',
        `Chain ${run.id} is held by another process (${held?.owner ?? 'unknown'}); resume with --force to take it over`,
      );
    }
    const previousSize = previous === undefined ? 0 : Buffer.byteLength(JSON.stringify(previous));
    await this.#makeRoom(previous === undefined ? 1 : 0, size - previousSize, run.id);
    await this.store.putRun(run);
    if (run.status !== 'running') await this.store.release(key, run.owner);
  }

  /** Deletes the oldest finished chains until one more (`added`) of `growth` more bytes fits; reads the runs only when full. */
  async #makeRoom(added: number, growth: number, keep: string): Promise<void> {
    const maxRuns = this.#options.maxRuns ?? 10_000;
    const maxBytes = this.#options.maxRunsBytes ?? DEFAULT_MAX_RUNS_BYTES;
    const usage = await this.store.runUsage();
    if (usage.count + added <= maxRuns && usage.bytes + growth <= maxBytes) return;
    const runs = await this.store.listRuns();
    const finished = runs
      .filter((run) => run.status === 'done' && run.id !== keep)
      .sort((a, b) => a.updatedAt - b.updatedAt);
    let { count, bytes } = usage;
    for (const run of finished) {
      if (count + added <= maxRuns && bytes + growth <= maxBytes) break;
      await this.store.deleteRun(run.id);
      count -= 1;
      bytes -= Buffer.byteLength(JSON.stringify(run));
    }
    if (count + added > maxRuns)
      throw new AgoraError(
        'BAD_REQUEST',
        `The hub holds ${count} unfinished chains (the limit is ${maxRuns}); resume or delete some`,
      );
    if (bytes + growth > maxBytes)
      throw new AgoraError(
        'BAD_REQUEST',
        `The hub's chain checkpoints would exceed ${maxBytes} bytes (--max-runs-bytes); resume or delete some`,
      );
  }

  /** A protocol document's text from the database. */
  async protocolText(hash: string): Promise<string | undefined> {
    return (await this.catalogue.document(hash))?.text;
  }

  /** A chain's last checkpoint. */
  getRun(id: string): Promise<ChainRun | undefined> {
    return this.store.getRun(id);
  }

  /** Unfinished chains (running, failed, capped), newest first; all of them with `all`. */
  async runs(all = false): Promise<ChainRun[]> {
    const runs = await this.store.listRuns();
    return runs.filter((run) => all || run.status !== 'done').sort((a, b) => b.updatedAt - a.updatedAt);
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
      const interval = this.#options.syncIntervalMs ?? 5 * 60_000;
      if ((this.#options.peers ?? []).some((peer) => (this.#lastSync.get(peer) ?? -Infinity) + interval <= this.#now()))
        await this.syncPeers();
    } catch (error) {
      this.logger.warn(`hub background work: ${describeError(error)}`);
    }
  }

  /** Runs {@link tick} every `everyMs` (default 5 s) until {@link close}; rounds never overlap. */
  startBackground(everyMs = 5000): void {
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
