import type { AgentRecord, CatalogueEntry, ChainRun } from './records.js';

/** What `putDocument` did: stored it, already had it (the text is never replaced), or refused it (full). */
export type PutDocumentResult = 'added' | 'exists' | 'full';

/** The agents written or removed after a version, as they stand now, and the version this answer is good for. */
export type AgentChanges = { version: number; changed: AgentRecord[]; removed: string[] };

/**
 * The documents added after a version (documents are never replaced nor removed), and the version this answer is good
 * for.
 */
export type DocumentChanges = { version: number; added: CatalogueEntry[] };

/**
 * Changes remembered per kind (agents, documents): each record's latest change is kept, the oldest beyond this many
 * are forgotten; a process further behind than that reads everything again.
 */
export const CHANGES_KEPT = 50_000;

/** Leases several hub processes share: who runs a chain, a room; and the store's own closing. */
export interface Leases {
  /** Takes or renews a lease on `key` for `owner`; false while another owner holds it. */
  claim(key: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Gives a lease up (only its owner can). */
  release(key: string, owner: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * Where a hub keeps everything it knows, so a restarted or replaced hub loses nothing and several hub processes
 * share one state. {@link MemoryHubStore} is the default; `RedisHubStore` (./redis-store.ts) is shared.
 */
export interface HubStore extends Leases {
  /** Stores an agent; false when the directory holds `cap` agents and this one is new. */
  putAgent(record: AgentRecord, cap: number): Promise<boolean>;
  getAgent(id: string): Promise<AgentRecord | undefined>;
  /** Removes an agent; false when there was none. */
  deleteAgent(id: string): Promise<boolean>;
  listAgents(): Promise<AgentRecord[]>;
  /** Stores a document (already verified by hash) once; its text is never replaced. */
  putDocument(entry: CatalogueEntry, text: string, cap: number): Promise<PutDocumentResult>;
  getDocument(hash: string): Promise<string | undefined>;
  listDocuments(): Promise<CatalogueEntry[]>;
  /** A number that changes whenever an agent or a document changes: processes update their indexes on a change. */
  version(): Promise<number>;
  /**
   * The agents changed after `since` (a {@link version}); undefined when the store no longer remembers that far back.
   */
  agentChanges(since: number): Promise<AgentChanges | undefined>;
  /** The documents added after `since`; undefined when the store no longer remembers that far back. */
  documentChanges(since: number): Promise<DocumentChanges | undefined>;
  putRun(run: ChainRun): Promise<void>;
  getRun(id: string): Promise<ChainRun | undefined>;
  deleteRun(id: string): Promise<void>;
  listRuns(): Promise<ChainRun[]>;
  /** How many checkpoints are held and their total size in bytes, without reading them. */
  runUsage(): Promise<{ count: number; bytes: number }>;
  /**
   * The documents a client has added to the catalogue, counted for every process sharing the store (its quota);
   * with `add`, counts one more and returns the new count.
   */
  clientAdds(client: string, add?: boolean): Promise<number>;
}

/**
 * The default hub store: everything in this process's memory (lost with it; use Redis to keep it).
 * @example const hub = await Hub.start({ store: new MemoryHubStore() });
 */
export class MemoryHubStore implements HubStore {
  readonly #agents = new Map<string, string>();
  readonly #documents = new Map<string, { entry: CatalogueEntry; text: string }>();
  readonly #runs = new Map<string, string>();
  #runBytes = 0;
  readonly #leases = new Map<string, { owner: string; until: number }>();
  readonly #now: () => number;
  #version = 0;
  readonly #agentLog = new ChangeLog();
  readonly #documentLog = new ChangeLog();

  /** @param now the lease clock (Unix ms), injected by tests. */
  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  // Records are kept as JSON, so a caller mutating what it got back never changes the store (as with Redis).
  async putAgent(record: AgentRecord, cap: number): Promise<boolean> {
    if (!this.#agents.has(record.id) && this.#agents.size >= cap) return false;
    this.#agents.set(record.id, JSON.stringify(record));
    this.#agentLog.add((this.#version += 1), record.id);
    return true;
  }

  async getAgent(id: string): Promise<AgentRecord | undefined> {
    const raw = this.#agents.get(id);
    return raw === undefined ? undefined : (JSON.parse(raw) as AgentRecord);
  }

  async deleteAgent(id: string): Promise<boolean> {
    const had = this.#agents.delete(id);
    if (had) this.#agentLog.add((this.#version += 1), id);
    return had;
  }

  async listAgents(): Promise<AgentRecord[]> {
    return [...this.#agents.values()].map((raw) => JSON.parse(raw) as AgentRecord);
  }

  async putDocument(entry: CatalogueEntry, text: string, cap: number): Promise<PutDocumentResult> {
    if (this.#documents.has(entry.hash)) return 'exists';
    if (this.#documents.size >= cap) return 'full';
    this.#documents.set(entry.hash, { entry: { ...entry }, text });
    this.#documentLog.add((this.#version += 1), entry.hash);
    return 'added';
  }

  async getDocument(hash: string): Promise<string | undefined> {
    return this.#documents.get(hash)?.text;
  }

  async listDocuments(): Promise<CatalogueEntry[]> {
    return [...this.#documents.values()].map(({ entry }) => ({ ...entry }));
  }

  async version(): Promise<number> {
    return this.#version;
  }

  async agentChanges(since: number): Promise<AgentChanges | undefined> {
    const ids = this.#agentLog.since(since);
    if (ids === undefined) return undefined;
    const changes: AgentChanges = { version: this.#version, changed: [], removed: [] };
    for (const id of ids) {
      const raw = this.#agents.get(id);
      if (raw === undefined) changes.removed.push(id);
      else changes.changed.push(JSON.parse(raw) as AgentRecord);
    }
    return changes;
  }

  async documentChanges(since: number): Promise<DocumentChanges | undefined> {
    const hashes = this.#documentLog.since(since);
    if (hashes === undefined) return undefined;
    const added = hashes.flatMap((hash) => {
      const held = this.#documents.get(hash);
      return held ? [{ ...held.entry }] : [];
    });
    return { version: this.#version, added };
  }

  async putRun(run: ChainRun): Promise<void> {
    const text = JSON.stringify(run);
    this.#runBytes += Buffer.byteLength(text) - Buffer.byteLength(this.#runs.get(run.id) ?? '');
    this.#runs.set(run.id, text);
  }

  async getRun(id: string): Promise<ChainRun | undefined> {
    const raw = this.#runs.get(id);
    return raw === undefined ? undefined : (JSON.parse(raw) as ChainRun);
  }

  async deleteRun(id: string): Promise<void> {
    this.#runBytes -= Buffer.byteLength(this.#runs.get(id) ?? '');
    this.#runs.delete(id);
  }

  async runUsage(): Promise<{ count: number; bytes: number }> {
    return { count: this.#runs.size, bytes: this.#runBytes };
  }

  // Bounded by the catalogue's own cap: a client is counted only once it has added a document.
  readonly #clientAdds = new Map<string, number>();

  async clientAdds(client: string, add = false): Promise<number> {
    const count = (this.#clientAdds.get(client) ?? 0) + (add ? 1 : 0);
    if (add) this.#clientAdds.set(client, count);
    return count;
  }

  async listRuns(): Promise<ChainRun[]> {
    return [...this.#runs.values()].map((raw) => JSON.parse(raw) as ChainRun);
  }

  async claim(key: string, owner: string, ttlMs: number): Promise<boolean> {
    const now = this.#now();
    const lease = this.#leases.get(key);
    if (lease !== undefined && lease.owner !== owner && lease.until > now) return false;
    this.#leases.set(key, { owner, until: now + ttlMs });
    return true;
  }

  async release(key: string, owner: string): Promise<void> {
    if (this.#leases.get(key)?.owner === owner) this.#leases.delete(key);
  }

  async close(): Promise<void> {}
}

/** The memory store's record of changes: (version, id) in version order, the oldest forgotten in batches. */
class ChangeLog {
  #versions: number[] = [];
  #ids: string[] = [];
  /** Changes at or below this version may have been forgotten. */
  #floor = 0;

  add(version: number, id: string): void {
    this.#versions.push(version);
    this.#ids.push(id);
    // Forgotten half at a time, so a write costs O(1) on average.
    if (this.#versions.length > 2 * CHANGES_KEPT) {
      this.#floor = this.#versions[CHANGES_KEPT - 1]!;
      this.#versions = this.#versions.slice(CHANGES_KEPT);
      this.#ids = this.#ids.slice(CHANGES_KEPT);
    }
  }

  /** The distinct ids changed after `since`, or undefined when changes that old are forgotten. */
  since(since: number): string[] | undefined {
    if (since < this.#floor) return undefined;
    let low = 0;
    let high = this.#versions.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.#versions[middle]! <= since) low = middle + 1;
      else high = middle;
    }
    return [...new Set(this.#ids.slice(low))];
  }
}
