// The hub's copy of the agents in this process, with what finds them fast: by id, by name, by protocol served, by
// words (the keyword index) and in name order (the listing); up agents counted as records change. The Directory keeps
// it in step with the store, record by record.
import { AgoraError } from '../errors.js';
import { normalizeHash } from '../protocol/document.js';
import { KeywordIndex, type IndexedField, type KeywordIndexOptions, type Match } from './keywords.js';
import type { AgentRecord } from './records.js';
import { SortedListing } from './_listing.js';

/** One agent found by a directory search, with why it matched. */
export type AgentHit = AgentRecord & { score?: number; matches?: Match[] };

/** A query of a directory search: `offset` skips that many results (a listing's later pages). */
export type AgentQuery = { q?: string; protocol?: string; limit?: number; offset?: number; includeDown?: boolean };

/**
 * A page of agents: `total` is how many the listing holds (absent for a word search, which ranks rather than counts).
 */
export type AgentPage = { agents: AgentHit[]; total?: number };

/** Most results a directory search returns at once (`limit`). */
export const MAX_PAGE = 1000;

function addTo(map: Map<string, Set<string>>, key: string, id: string): void {
  let ids = map.get(key);
  if (ids === undefined) map.set(key, (ids = new Set()));
  ids.add(id);
}

function removeFrom(map: Map<string, Set<string>>, key: string, id: string): void {
  const ids = map.get(key);
  ids?.delete(id);
  if (ids?.size === 0) map.delete(key);
}

/** What the keyword index holds of an agent: its name, description, capabilities and protocols, weighted. */
function fieldsOf(record: AgentRecord): IndexedField[] {
  return [
    { field: 'name', text: record.name, weight: 2 },
    { field: 'description', text: record.description, weight: 1 },
    { field: 'capabilities', text: record.capabilities.join(' '), weight: 2 },
    ...record.protocols.flatMap((protocol) => [
      { field: `protocol "${protocol.name}"`, text: protocol.name, weight: 3 },
      { field: `protocol "${protocol.name}"`, text: protocol.description, weight: 1.5 },
    ]),
  ];
}

/** The agents held in this process and their indexes. */
export class AgentIndex {
  readonly records = new Map<string, AgentRecord>();
  readonly #index: KeywordIndex;
  readonly #byProtocol = new Map<string, Set<string>>();
  readonly #listing = new SortedListing();
  /** Lower-cased name → ids: names are looked up per registration and per resolve, never by a walk of every record. */
  readonly #byName = new Map<string, Set<string>>();
  #up = 0;

  constructor(options?: KeywordIndexOptions) {
    this.#index = new KeywordIndex(options);
  }

  /** Holds these records instead of the ones held (each index built once, sorted once). */
  load(records: readonly AgentRecord[]): void {
    this.#index.clear();
    this.records.clear();
    this.#byProtocol.clear();
    this.#byName.clear();
    this.#up = 0;
    for (const record of records) this.#hold(record);
    this.#index.setMany(records.map((record) => [record.id, fieldsOf(record)] as const));
    this.#listing.load(records.map((record) => [record.id, record.name] as const));
  }

  /** Holds a record, in place of the one of its id. */
  remember(record: AgentRecord): void {
    this.forget(record.id);
    this.#hold(record);
    this.#index.set(record.id, fieldsOf(record));
    this.#listing.set(record.id, record.name);
  }

  forget(id: string): void {
    const old = this.records.get(id);
    if (old === undefined) return;
    this.records.delete(id);
    if (old.status === 'up') this.#up -= 1;
    this.#index.delete(id);
    this.#listing.delete(id);
    removeFrom(this.#byName, old.name.toLowerCase(), id);
    for (const protocol of old.protocols) removeFrom(this.#byProtocol, protocol.hash, id);
  }

  /** A record in the maps (not the index nor the listing). */
  #hold(record: AgentRecord): void {
    this.records.set(record.id, record);
    if (record.status === 'up') this.#up += 1;
    addTo(this.#byName, record.name.toLowerCase(), record.id);
    for (const protocol of record.protocols) addTo(this.#byProtocol, protocol.hash, record.id);
  }

  /** The agents of a name (any case). */
  named(name: string): AgentRecord[] {
    return [...(this.#byName.get(name.toLowerCase()) ?? [])].flatMap((id) => this.records.get(id) ?? []);
  }

  get counts(): { up: number; down: number } {
    return { up: this.#up, down: this.records.size - this.#up };
  }

  /** The keyword index and records as they stand (for routing). */
  get view(): {
    index: KeywordIndex;
    records: ReadonlyMap<string, AgentRecord>;
    servingOf(hash: string): ReadonlySet<string> | undefined;
  } {
    return { index: this.#index, records: this.records, servingOf: (hash) => this.#byProtocol.get(hash) };
  }

  /**
   * A page of agents: ranked by words with `q`, else listed by name (with the listing's total); `protocol` keeps those
   * serving it, `offset` skips that many.
   */
  page(query: AgentQuery = {}): AgentPage {
    const limit = Math.max(1, Math.min(query.limit ?? 50, MAX_PAGE));
    const offset = Math.max(0, Math.floor(query.offset ?? 0));
    let hash: string | undefined;
    if (query.protocol !== undefined && query.protocol !== '') {
      hash = normalizeHash(query.protocol);
      if (hash === undefined)
        throw new AgoraError(
          'BAD_REQUEST',
          `protocol is not a SHA1 in hex or base64: ${JSON.stringify(query.protocol.slice(0, 60))}`,
        );
    }
    const serving = hash === undefined ? undefined : (this.#byProtocol.get(hash) ?? new Set<string>());
    const accept = (id: string) =>
      (serving === undefined || serving.has(id)) &&
      (query.includeDown === true || this.records.get(id)?.status === 'up');
    if (query.q !== undefined && query.q.trim() !== '') {
      // Filtered by protocol, the agents serving it are scored directly (usually few); else the index finds them.
      const wanted = offset + limit;
      const scored =
        serving === undefined
          ? this.#index.search(query.q, wanted, accept)
          : this.#index.score(query.q, serving, wanted, accept);
      const agents = scored.slice(offset).flatMap(({ id, score, matches }) => {
        const record = this.records.get(id);
        return record ? [{ ...record, score: Math.round(score * 1000) / 1000, matches }] : [];
      });
      return { agents };
    }
    if (serving !== undefined) {
      const hits: AgentHit[] = [];
      for (const id of serving) if (accept(id)) hits.push(this.records.get(id)!);
      hits.sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
      return { agents: hits.slice(offset, offset + limit), total: hits.length };
    }
    const { ids, total } = this.#listing.page(offset, limit, query.includeDown === true ? undefined : accept);
    return { agents: ids.map((id) => this.records.get(id)!), total };
  }
}
