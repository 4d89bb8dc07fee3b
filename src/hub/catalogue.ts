import { z } from 'zod';
import { AgoraError, describeError } from '../errors.js';
import type { Logger } from '../log.js';
import { hashText, normalizeHash, parseDocument, type ProtocolDocument } from '../protocol/document.js';
import { fetchSource } from '../protocol/sources.js';
import { HUB_DEFAULTS } from './defaults.js';
import { KeywordIndex, type Match } from './keywords.js';
import type { ReadOptions } from './read-agent.js';
import type { CatalogueEntry } from './records.js';
import type { HubStore } from './store.js';
import { SortedListing } from './_listing.js';
import { StoreView } from './_store-view.js';

/** Options of {@link Catalogue}. */
export type CatalogueOptions = {
  store: HubStore;
  /** Documents held at most; more are refused (defaults of these three: {@link HUB_DEFAULTS}). */
  maxDocuments?: number;
  /** Largest document accepted, in bytes. */
  maxDocumentBytes?: number;
  /** New documents one client (address, or IPv6 /64) may add, by publishing or registering, per hub process. */
  maxDocumentsPerClient?: number;
  now?: () => number;
  logger?: Logger;
};

/** One document found by {@link Catalogue.search}, with why. */
export type CatalogueHit = CatalogueEntry & { score?: number; matches?: Match[] };

/**
 * A page of documents: `total` is how many the listing holds (absent for a word search, which ranks rather than
 * counts).
 */
export type CataloguePage = { protocols: CatalogueHit[]; total?: number };

/** What a sync with a peer hub did. */
export type SyncReport = { peer: string; added: number; known: number; refused: { hash: string; reason: string }[] };

const peerListingSchema = z.object({
  protocols: z.array(z.object({ hash: z.string() }).loose()).max(100_000),
  total: z.number().int().nonnegative().optional(),
});

/** Documents asked of a peer per page of its listing. */
const PEER_PAGE = 1000;

/** What the keyword index holds of a document: its name and description. */
function fieldsOf(entry: CatalogueEntry) {
  return [
    { field: 'name', text: entry.name, weight: 3 },
    { field: 'description', text: entry.description, weight: 1 },
  ];
}

/**
 * The protocol database: documents by hash, verified on the way in, searchable by name and description.
 * @example const entry = await catalogue.publish(hash, text);
 */
export class Catalogue {
  readonly #store: HubStore;
  readonly #maxDocuments: number;
  readonly #maxDocumentBytes: number;
  readonly #maxPerClient: number;
  readonly #now: () => number;
  readonly #index = new KeywordIndex();
  readonly #entries = new Map<string, CatalogueEntry>();
  readonly #listing = new SortedListing();
  readonly #view: StoreView;

  constructor(options: CatalogueOptions) {
    this.#store = options.store;
    this.#maxDocuments = options.maxDocuments ?? HUB_DEFAULTS.maxDocuments;
    this.#maxDocumentBytes = options.maxDocumentBytes ?? HUB_DEFAULTS.maxDocumentBytes;
    this.#maxPerClient = options.maxDocumentsPerClient ?? HUB_DEFAULTS.maxDocumentsPerClient;
    this.#now = options.now ?? Date.now;
    this.#view = new StoreView(
      this.#store,
      async () => {
        const entries = await this.#store.listDocuments();
        this.#index.clear();
        this.#entries.clear();
        for (const entry of entries) this.#entries.set(entry.hash, entry);
        this.#index.setMany(entries.map((entry) => [entry.hash, fieldsOf(entry)] as const));
        this.#listing.load(entries.map((entry) => [entry.hash, entry.name] as const));
      },
      async (since) => {
        // Documents are only ever added: what other processes added is applied one by one.
        const changes = await this.#store.documentChanges(since);
        if (changes === undefined) return undefined;
        for (const entry of changes.added) this.#remember(entry);
        return changes.version;
      },
    );
  }

  /** Largest document accepted, in bytes. */
  get maxDocumentBytes(): number {
    return this.#maxDocumentBytes;
  }

  /** Reloads the search index when another process (or this one) changed the store. */
  refresh(): Promise<void> {
    return this.#view.refresh();
  }

  #remember(entry: CatalogueEntry): void {
    this.#entries.set(entry.hash, entry);
    this.#index.set(entry.hash, fieldsOf(entry));
    this.#listing.set(entry.hash, entry.name);
  }

  /** Documents held in this process's copy (after {@link refresh}). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Publishes a document: the hash given (hex or base64) must be the SHA1 of the exact text, the text must
   * parse as a protocol document and fit the size cap. Publishing a document already held is a no-op.
   */
  async publish(rawHash: unknown, text: unknown, client?: string): Promise<CatalogueEntry> {
    if (typeof rawHash !== 'string') throw new AgoraError('BAD_REQUEST', 'hash must be a string (hex or base64 SHA1)');
    if (typeof text !== 'string') throw new AgoraError('BAD_REQUEST', 'text must be a string (the exact document)');
    const hash = normalizeHash(rawHash);
    if (hash === undefined)
      throw new AgoraError(
        'BAD_REQUEST',
        `hash is not a SHA1 in hex or base64: ${JSON.stringify(rawHash.slice(0, 60))}`,
      );
    const bytes = Buffer.byteLength(text);
    if (bytes > this.#maxDocumentBytes)
      throw new AgoraError(
        'REQUEST_TOO_LARGE',
        `Protocol document is ${bytes} bytes, over the ${this.#maxDocumentBytes}-byte limit`,
      );
    const actual = hashText(text);
    if (actual !== hash)
      throw new AgoraError('BAD_REQUEST', `Hash mismatch: the text hashes to ${actual}, not ${hash}`);
    return this.add(parseDocument(text, `protocol ${hash}`), client);
  }

  /**
   * Adds a document already parsed and hashed (read from an agent, or published), counted against `client`'s quota when
   * given.
   */
  async add(document: ProtocolDocument, client?: string): Promise<CatalogueEntry> {
    if (Buffer.byteLength(document.text) > this.#maxDocumentBytes) {
      throw new AgoraError(
        'REQUEST_TOO_LARGE',
        `Protocol document ${document.hash} is over the ${this.#maxDocumentBytes}-byte limit`,
      );
    }
    const known = this.#entries.get(document.hash);
    if (known !== undefined) return known;
    // Counted in the store: every process (hub or worker) sharing it counts against one quota.
    const added = client === undefined ? 0 : await this.#store.clientAdds(client);
    if (client !== undefined && added >= this.#maxPerClient) {
      throw new AgoraError(
        'RATE_LIMITED',
        `This client has added ${added} protocol documents, its quota (--max-documents-per-client)`,
      );
    }
    const entry: CatalogueEntry = {
      hash: document.hash,
      name: document.metadata.name,
      description: document.metadata.description,
      multiround: document.metadata.multiround,
      publishedAt: this.#now(),
    };
    const result = await this.#view.write(
      () => this.#store.putDocument(entry, document.text, this.#maxDocuments),
      (put) => put === 'added',
    );
    if (result === 'full')
      throw new AgoraError('BAD_REQUEST', `The protocol database is full (${this.#maxDocuments} documents)`);
    if (result === 'exists') return this.#entries.get(entry.hash) ?? entry;
    if (client !== undefined) await this.#store.clientAdds(client, true);
    this.#remember(entry);
    return entry;
  }

  /** The exact text of a document, by hash in either encoding. */
  async text(rawHash: string): Promise<string | undefined> {
    const hash = normalizeHash(rawHash);
    return hash === undefined ? undefined : this.#store.getDocument(hash);
  }

  /** A held document, parsed (for the directory: a document it holds is not fetched again). */
  async document(hash: string): Promise<ProtocolDocument | undefined> {
    const text = await this.#store.getDocument(hash);
    if (text === undefined) return undefined;
    try {
      return parseDocument(text, hash);
    } catch {
      return undefined;
    }
  }

  /** Documents matching `query` (by name and description), best first; all of them (by name) without a query. */
  async search(query: string | undefined, limit = 50): Promise<CatalogueHit[]> {
    return (await this.page(query, limit)).protocols;
  }

  /** A page of documents: ranked by `query`, else listed by name with the listing's total; `offset` skips that many. */
  async page(query: string | undefined, limit = 50, offset = 0): Promise<CataloguePage> {
    await this.refresh();
    if (query === undefined || query.trim() === '') {
      const { ids, total } = this.#listing.page(offset, limit);
      return { protocols: ids.map((hash) => this.#entries.get(hash)!), total };
    }
    const protocols = this.#index
      .search(query, offset + limit)
      .slice(offset)
      .flatMap(({ id, score, matches }) => {
        const entry = this.#entries.get(id);
        return entry ? [{ ...entry, score: Math.round(score * 1000) / 1000, matches }] : [];
      });
    return { protocols };
  }

  /**
   * The hashes a peer hub lists, read a page (1,000, a hub's largest) at a time while its listing says there are more;
   * at most as many pages as this catalogue could hold documents.
   */
  async #peerListing(peer: string, options: ReadOptions): Promise<string[]> {
    const maxBytes = Math.max(this.#maxDocumentBytes, 8 * 1024 * 1024);
    const hashes: string[] = [];
    for (let page = 0; page <= Math.ceil(this.#maxDocuments / PEER_PAGE); page++) {
      let listing: unknown;
      try {
        listing = JSON.parse(
          (
            await fetchSource(`${peer}/protocols?limit=${PEER_PAGE}&offset=${hashes.length}`, { ...options, maxBytes })
          ).toString('utf8'),
        );
      } catch (error) {
        throw new AgoraError(
          'PEER_FAILURE',
          `Cannot read the catalogue of ${peer}: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      const parsed = peerListingSchema.safeParse(listing);
      if (!parsed.success) throw new AgoraError('PEER_FAILURE', `${peer}/protocols is not a catalogue listing`);
      for (const { hash } of parsed.data.protocols) hashes.push(hash);
      // A peer that gives no total (an older hub) is read in one page; one that lists nothing more is done.
      const { total } = parsed.data;
      if (total === undefined || parsed.data.protocols.length === 0 || hashes.length >= total) break;
    }
    return hashes;
  }

  /**
   * Pulls a peer hub's catalogue: every document it lists that this one lacks is fetched from the peer's
   * `/protocols/:hash` and kept only when its exact bytes hash to that hash (a mismatch is refused and reported).
   */
  async syncFrom(
    peerUrl: string,
    options: ReadOptions & { logger?: Logger; maxNew?: number } = {},
  ): Promise<SyncReport> {
    const peer = peerUrl.replace(/\/+$/, '');
    const report: SyncReport = { peer, added: 0, known: 0, refused: [] };
    const listed = await this.#peerListing(peer, options);
    let fetched = 0;
    for (const rawHash of listed) {
      const hash = normalizeHash(rawHash);
      if (hash === undefined) {
        report.refused.push({ hash: rawHash.slice(0, 60), reason: 'not a protocol hash' });
        continue;
      }
      if ((await this.#store.getDocument(hash)) !== undefined) {
        report.known += 1;
        continue;
      }
      if (fetched >= (options.maxNew ?? 1000)) break;
      fetched += 1;
      try {
        const bytes = await fetchSource(`${peer}/protocols/${hash}`, { ...options, maxBytes: this.#maxDocumentBytes });
        const actual = hashText(bytes);
        if (actual !== hash) throw new AgoraError('PEER_FAILURE', `served under ${hash} but hashes to ${actual}`);
        await this.add(parseDocument(bytes, `${peer}/protocols/${hash}`));
        report.added += 1;
      } catch (error) {
        const reason = error instanceof AgoraError ? error.message : describeError(error);
        report.refused.push({ hash, reason });
        options.logger?.warn(`hub sync: refused ${hash} from ${peer}: ${reason}`);
      }
    }
    return report;
  }
}
