import { AgoraError, describeError } from '../errors.js';
import { silentLogger, type Logger } from '../log.js';
import type { Catalogue } from './catalogue.js';
import { HUB_DEFAULTS } from './defaults.js';
import type { KeywordIndex, KeywordIndexOptions } from './keywords.js';
import { normalizeAgentUrl, readAgent, vetAgentUrl, type ReadOptions } from './read-agent.js';
import type { AgentRecord } from './records.js';
import {
  agentId,
  givenCapabilities,
  listedProtocols,
  MAX_CAPABILITIES,
  MAX_TEXT,
  refuseTakeover,
  type Registration,
} from './registration.js';
import type { HubStore } from './store.js';
import { AgentIndex, type AgentHit, type AgentPage, type AgentQuery } from './_agent-index.js';
import { StoreView } from './_store-view.js';

export { MAX_PAGE, type AgentHit, type AgentPage, type AgentQuery } from './_agent-index.js';
export type { Registration } from './registration.js';

/** Options of {@link Directory}. */
export type DirectoryOptions = ReadOptions & {
  store: HubStore;
  catalogue: Catalogue;
  /** Agents held at most (defaults of these four: {@link HUB_DEFAULTS}). */
  maxAgents?: number;
  /** Time between two checks of an agent. */
  checkIntervalMs?: number;
  /** Consecutive failed checks before an agent is marked down. */
  maxMissedChecks?: number;
  /** An agent down and unseen this long is removed (`--remove-down-after`). */
  removeDownAfterMs?: number;
  now?: () => number;
  logger?: Logger;
  index?: KeywordIndexOptions;
};

/**
 * The hub's directory: agents registered by URL, re-read periodically, searchable by words and protocol.
 * @example const record = await directory.register({ url: 'https://weather.example' });
 */
export class Directory {
  readonly #store: HubStore;
  readonly #catalogue: Catalogue;
  readonly #options: DirectoryOptions;
  readonly #maxAgents: number;
  readonly #checkIntervalMs: number;
  readonly #maxMissed: number;
  readonly #now: () => number;
  readonly #logger: Logger;
  /** This process's copy of the agents, with their indexes (kept in step with the store by the records that change). */
  readonly #agents: AgentIndex;
  readonly #view: StoreView;

  constructor(options: DirectoryOptions) {
    this.#options = options;
    this.#store = options.store;
    this.#catalogue = options.catalogue;
    this.#maxAgents = options.maxAgents ?? HUB_DEFAULTS.maxAgents;
    this.#checkIntervalMs = options.checkIntervalMs ?? HUB_DEFAULTS.checkIntervalMs;
    this.#maxMissed = options.maxMissedChecks ?? HUB_DEFAULTS.maxMissedChecks;
    this.#now = options.now ?? Date.now;
    this.#logger = options.logger ?? silentLogger;
    this.#agents = new AgentIndex(options.index);
    this.#view = new StoreView(
      this.#store,
      () => this.#reload(),
      (since) => this.#apply(since),
    );
  }

  /**
   * Brings the index in step when the store changed under another process (by the records that changed); cheap (one
   * read) when it did not.
   */
  refresh(): Promise<void> {
    return this.#view.refresh();
  }

  /** Everything read again (a process's first read, or one too far behind the store's record of changes). */
  async #reload(): Promise<void> {
    this.#agents.load(await this.#store.listAgents());
  }

  /** The records other processes wrote or removed since `since`, applied one by one. */
  async #apply(since: number): Promise<number | undefined> {
    const changes = await this.#store.agentChanges(since);
    if (changes === undefined) return undefined;
    for (const id of changes.removed) this.#agents.forget(id);
    for (const record of changes.changed) this.#agents.remember(record);
    return changes.version;
  }

  /**
   * Agents held in this process's copy, up and down (after {@link refresh}); counted as records change, never
   * recounted.
   */
  get counts(): { up: number; down: number } {
    return this.#agents.counts;
  }

  /** Writes a record to the store (capped) and to this process's index. */
  async put(record: AgentRecord): Promise<void> {
    if (
      !(await this.#view.write(
        () => this.#store.putAgent(record, this.#maxAgents),
        (stored) => stored,
      ))
    ) {
      throw new AgoraError('BAD_REQUEST', `The directory is full (${this.#maxAgents} agents)`);
    }
    this.#agents.remember(record);
  }

  /**
   * Registers (or re-reads) an agent: refused when it answers none of the kinds' reads (`readAgent`), or is private and
   * not allowed.
   */
  async register(registration: Registration): Promise<AgentRecord> {
    if (typeof registration?.url !== 'string')
      throw new AgoraError('BAD_REQUEST', 'url must be a string (the agent base URL)');
    const url = normalizeAgentUrl(registration.url);
    const id = agentId(url);
    const capabilities = givenCapabilities(registration.capabilities);
    await vetAgentUrl(url, this.#options);
    const reading = await readAgent(url, this.#options, (hash) => this.#catalogue.document(hash));
    const now = this.#now();
    const previous = await this.#store.getAgent(id);
    const given = (value: unknown) =>
      typeof value === 'string' && value.trim() !== '' ? value.trim().slice(0, MAX_TEXT) : undefined;
    const name =
      given(registration.name)?.slice(0, 200) ?? reading.name?.slice(0, 200) ?? previous?.name ?? new URL(url).host;
    await this.#checkName(id, name, previous, registration, capabilities);
    for (const document of reading.documents) await this.#keepDocument(document, registration.client);
    const registrant = previous?.registrant ?? registration.registrant;
    const record: AgentRecord = {
      id,
      url,
      name,
      description:
        given(registration.description) ??
        reading.description?.slice(0, MAX_TEXT) ??
        previous?.description ??
        reading.documents.map((document) => document.metadata.name).join(', '),
      kind: reading.kind,
      protocols: listedProtocols(reading.documents),
      capabilities:
        capabilities ??
        (reading.capabilities.length > 0
          ? reading.capabilities.slice(0, MAX_CAPABILITIES)
          : (previous?.capabilities ?? [])),
      status: 'up',
      missedChecks: 0,
      registeredAt: previous?.registeredAt ?? now,
      lastSeen: now,
      lastChecked: now,
      ...(reading.problems.length ? { lastError: reading.problems.slice(0, 5).join('; ') } : {}),
      ...(registrant !== undefined ? { registrant } : {}),
    };
    await this.put(record);
    return record;
  }

  /**
   * Names are unique: the first registrant keeps one. Another URL under a taken name (any case), or a new name,
   * description or capabilities for a URL someone else registered, is refused (409) unless it comes with the first
   * registrant's token.
   */
  async #checkName(
    id: string,
    name: string,
    previous: AgentRecord | undefined,
    registration: Registration,
    capabilities: string[] | undefined,
  ): Promise<void> {
    if (previous !== undefined) refuseTakeover(previous, registration, name, capabilities);
    const sameRegistrant = (record: AgentRecord) =>
      record.registrant !== undefined && record.registrant === registration.registrant;
    await this.refresh();
    for (const record of this.#agents.named(name)) {
      if (record.id === id || sameRegistrant(record)) continue;
      throw new AgoraError(
        'CONFLICT',
        `The name ${JSON.stringify(name)} is taken by ${record.url}; register under another name, or with the token that registered it`,
      );
    }
  }

  async #keepDocument(document: Parameters<Catalogue['add']>[0], client?: string): Promise<void> {
    try {
      await this.#catalogue.add(document, client);
    } catch (error) {
      // A full catalogue still lets the agent register: its protocols are listed, their texts stay with it.
      this.#logger.warn(`hub: not keeping ${document.hash}: ${describeError(error)}`);
    }
  }

  /**
   * Re-reads one agent: up with what it now lists when it answers, one more missed check (down after the limit) when
   * not.
   */
  async check(id: string): Promise<AgentRecord | undefined> {
    const record = await this.#store.getAgent(id);
    if (record === undefined) return undefined;
    const now = this.#now();
    let next: AgentRecord;
    try {
      const reading = await readAgent(record.url, this.#options, (hash) => this.#catalogue.document(hash), false);
      for (const document of reading.documents) await this.#keepDocument(document);
      const { lastError: _dropped, ...rest } = record;
      next = {
        ...rest,
        kind: reading.kind,
        protocols: listedProtocols(reading.documents),
        status: 'up',
        missedChecks: 0,
        lastSeen: now,
        lastChecked: now,
        ...(reading.problems.length ? { lastError: reading.problems.slice(0, 5).join('; ') } : {}),
      };
      if (record.status === 'down') this.#logger.info(`hub: ${record.name} (${record.url}) is up again`);
    } catch (error) {
      const missedChecks = record.missedChecks + 1;
      const status = missedChecks >= this.#maxMissed ? 'down' : record.status;
      if (status === 'down' && record.status === 'up')
        this.#logger.warn(`hub: ${record.name} (${record.url}) is down after ${missedChecks} missed checks`);
      if (
        status === 'down' &&
        now - record.lastSeen >= (this.#options.removeDownAfterMs ?? HUB_DEFAULTS.removeDownAfterMs)
      ) {
        this.#logger.info(
          `hub: removing ${record.name} (${record.url}), down and unseen since ${new Date(record.lastSeen).toISOString()}`,
        );
        await this.remove(id);
        return undefined;
      }
      next = {
        ...record,
        missedChecks,
        status,
        lastChecked: now,
        lastError: error instanceof Error ? error.message.slice(0, 500) : String(error),
      };
    }
    // Removed while we read it: do not bring it back.
    if ((await this.#store.getAgent(id)) === undefined) return undefined;
    await this.put(next);
    return next;
  }

  /** Checks every agent whose check is due, each by one hub process only (a lease per agent); returns how many. */
  async checkDue(owner: string): Promise<number> {
    await this.refresh();
    const now = this.#now();
    const due = [...this.#agents.records.values()].filter(
      (record) => record.lastChecked + this.#checkIntervalMs <= now,
    );
    let checked = 0;
    for (const record of due) {
      if (!(await this.#store.claim(`check:${record.id}`, owner, this.#checkIntervalMs))) continue;
      await this.check(record.id);
      checked += 1;
    }
    return checked;
  }

  /** An agent by id, URL or directory name (an up agent first when several share the name). */
  async resolve(target: string): Promise<AgentRecord | undefined> {
    await this.refresh();
    const byId = this.#agents.records.get(target);
    if (byId) return byId;
    if (/^https?:\/\//i.test(target)) {
      try {
        return this.#agents.records.get(agentId(normalizeAgentUrl(target)));
      } catch {
        return undefined;
      }
    }
    const named = this.#agents.named(target.trim());
    return named.find((record) => record.status === 'up') ?? named[0];
  }

  /** Agents matching words (name, description, capabilities, protocols) and/or serving a protocol, best first. */
  async search(query: AgentQuery = {}): Promise<AgentHit[]> {
    return (await this.page(query)).agents;
  }

  /**
   * A page of agents: ranked by words with `q`, else listed by name (with the listing's total); `protocol` keeps those
   * serving it, `offset` skips that many.
   */
  async page(query: AgentQuery = {}): Promise<AgentPage> {
    await this.refresh();
    return this.#agents.page(query);
  }

  /** The keyword index and records as they stand in this process (for routing, after {@link refresh}). */
  get view(): {
    index: KeywordIndex;
    records: ReadonlyMap<string, AgentRecord>;
    servingOf(hash: string): ReadonlySet<string> | undefined;
  } {
    return this.#agents.view;
  }

  /** Removes an agent; false when it was not registered. */
  async remove(id: string): Promise<boolean> {
    const removed = await this.#store.deleteAgent(id);
    this.#agents.forget(id);
    return removed;
  }
}
