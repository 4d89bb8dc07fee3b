import { describeError } from '../errors.js';
import { DEFAULT_CONVERSATION_TTL_MS } from '../_defaults.js';
import type { Logger } from '../log.js';
import type { AgentMemory } from '../memory/file.js';
import { parseDocument, type ProtocolDocument } from './document.js';

/** Bounds on what an agent keeps of strangers' documents; every field has a default fit for the open internet. */
export type LearnedLimits = {
  /** Learned documents kept (in memory and on disk or in Redis). Default 500. */
  maxCount?: number;
  /** Bytes of learned documents kept. Default 16 MiB. */
  maxBytes?: number;
  /** A document used within this many ms may belong to a live conversation: never evicted. Default 300,000. */
  liveMs?: number;
  /** Documents held for the query that brought them, not yet chosen. Default 16. */
  maxCandidates?: number;
  /** Bytes of those. Default 1 MiB. */
  maxCandidateBytes?: number;
};

/** Options of {@link LearnedDocuments}. */
export type LearnedOptions = LearnedLimits & { memory: AgentMemory; logger: Logger; now?: () => number };

/** `storedUseAt`: the use time last written to memory, so other processes sharing it see the document in use. */
type Entry = { document: ProtocolDocument; bytes: number; usedAt: number; storedUseAt?: number };
type Saved = { text?: unknown; usedAt?: unknown; learnedAt?: unknown };

const PREFIX = 'documents/';

function sizeOf(document: ProtocolDocument): number {
  return Buffer.byteLength(document.text, 'utf8');
}

/** A map kept in least-recently-used order, bounded in count and bytes. */
class Bounded {
  readonly entries = new Map<string, Entry>();
  bytes = 0;
  /** Bumped when a document comes or goes (not when one is used). */
  version = 0;

  add(entry: Entry): void {
    const old = this.entries.get(entry.document.hash);
    if (old) this.bytes -= old.bytes;
    else this.version += 1;
    this.entries.delete(entry.document.hash);
    this.entries.set(entry.document.hash, entry);
    this.bytes += entry.bytes;
  }

  delete(hash: string): Entry | undefined {
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    this.entries.delete(hash);
    this.bytes -= entry.bytes;
    this.version += 1;
    return entry;
  }

  touch(hash: string, now: number): Entry | undefined {
    const entry = this.entries.get(hash);
    if (!entry) return undefined;
    entry.usedAt = now;
    // Re-inserted: the map's order is the order of use.
    this.entries.delete(hash);
    this.entries.set(hash, entry);
    return entry;
  }
}

/**
 * What an agent keeps of documents peers sent it. A document from a source is first a *candidate*, held in a small
 * bounded cache for the query that brought it; it is stored (memory: disk or Redis) and served only once the agent
 * chooses to serve it ({@link adopt}). Learned documents are bounded in count and bytes, the least recently used
 * evicted first, never one used within `liveMs` (a conversation under way may need it).
 */
export class LearnedDocuments {
  readonly #options: LearnedOptions;
  readonly #now: () => number;
  readonly #learned = new Bounded();
  readonly #candidates = new Bounded();
  readonly #maxCount: number;
  readonly #maxBytes: number;
  readonly #liveMs: number;

  constructor(options: LearnedOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#maxCount = options.maxCount ?? 500;
    this.#maxBytes = options.maxBytes ?? 16 * 1024 * 1024;
    this.#liveMs = options.liveMs ?? DEFAULT_CONVERSATION_TTL_MS;
  }

  /** Loads what is stored and not known yet (learned before a restart, or by another process sharing the memory). */
  async load(isKnown: (hash: string) => boolean): Promise<void> {
    const { memory, logger } = this.#options;
    const keys = await memory.keys(PREFIX);
    const loaded: Entry[] = [];
    await Promise.all(
      keys.map(async (key) => {
        const hash = key.slice(PREFIX.length);
        if (this.#learned.entries.has(hash) || isKnown(hash)) return;
        try {
          const saved = (await memory.get(key)) as Saved | undefined;
          if (!saved || typeof saved.text !== 'string') return;
          const document = parseDocument(saved.text, key);
          if (document.hash !== hash) return;
          const usedAt = timeOf(saved.usedAt) ?? timeOf(saved.learnedAt) ?? 0;
          loaded.push({ document, bytes: sizeOf(document), usedAt, storedUseAt: usedAt });
        } catch (error) {
          logger.warn(`learned document ${key} skipped: ${describeError(error)}`);
        }
      }),
    );
    if (!loaded.length) return;
    // Oldest use first, so the map's order is the order of use.
    loaded.sort((a, b) => a.usedAt - b.usedAt);
    const known = new Map(this.#learned.entries);
    this.#learned.entries.clear();
    this.#learned.bytes = 0;
    for (const entry of [...loaded, ...known.values()]) this.#learned.add(entry);
    await this.#evict(undefined);
  }

  /** A number that changes whenever a learned document comes or goes. */
  get version(): number {
    return this.#learned.version;
  }

  /** A learned (chosen) document by hash, without marking it used. */
  peek(hash: string): ProtocolDocument | undefined {
    return this.#learned.entries.get(hash)?.document;
  }

  /**
   * A learned document by hash, marked used (a query or a turn under it). The use time is written back to memory
   * at most once per half `liveMs`, so another process sharing the memory does not evict what a conversation here uses.
   */
  use(hash: string): ProtocolDocument | undefined {
    const now = this.#now();
    const entry = this.#learned.touch(hash, now);
    if (!entry) return undefined;
    if (entry.storedUseAt === undefined || now - entry.storedUseAt >= this.#liveMs / 2) {
      entry.storedUseAt = now;
      const { document } = entry;
      this.#options.memory
        .set(`${PREFIX}${hash}`, {
          text: document.text,
          name: document.metadata.name,
          usedAt: new Date(now).toISOString(),
        })
        .catch((error: unknown) =>
          this.#options.logger.warn(`learned protocol ${hash}: could not record its use: ${describeError(error)}`),
        );
    }
    return entry.document;
  }

  /** A candidate held for the query that brought it, if still cached. */
  candidate(hash: string): ProtocolDocument | undefined {
    return this.#candidates.touch(hash, this.#now())?.document;
  }

  /** Holds a peer's document for the current query only (bounded cache: the oldest goes first). */
  hold(document: ProtocolDocument): void {
    const bytes = sizeOf(document);
    const maxBytes = this.#options.maxCandidateBytes ?? 1024 * 1024;
    const maxCount = this.#options.maxCandidates ?? 16;
    if (bytes > maxBytes) return;
    this.#candidates.add({ document, bytes, usedAt: this.#now() });
    for (const hash of this.#candidates.entries.keys()) {
      if (this.#candidates.entries.size <= maxCount && this.#candidates.bytes <= maxBytes) break;
      this.#candidates.delete(hash);
    }
  }

  /** The learned documents, least recently used first. */
  list(): ProtocolDocument[] {
    return [...this.#learned.entries.values()].map((entry) => entry.document);
  }

  /** Count and bytes held. */
  size(): { count: number; bytes: number; candidates: number } {
    return { count: this.#learned.entries.size, bytes: this.#learned.bytes, candidates: this.#candidates.entries.size };
  }

  /**
   * Makes a document learned: stored and served from now on, then evicts the least recently used over the caps.
   * Returns false (and keeps it a candidate) when it does not fit: every other document is in use.
   */
  async adopt(document: ProtocolDocument): Promise<boolean> {
    if (this.#learned.entries.has(document.hash)) {
      this.#learned.touch(document.hash, this.#now());
      return true;
    }
    const now = this.#now();
    const entry: Entry = { document, bytes: sizeOf(document), usedAt: now, storedUseAt: now };
    this.#learned.add(entry);
    if (!(await this.#evict(document.hash))) {
      this.#learned.delete(document.hash);
      this.hold(document);
      this.#options.logger.warn(
        `protocol "${document.metadata.name}" ${document.hash} not stored: the learned documents are full and all in use`,
      );
      return false;
    }
    this.#candidates.delete(document.hash);
    const stamp = new Date(now).toISOString();
    await this.#options.memory.set(`${PREFIX}${document.hash}`, {
      text: document.text,
      name: document.metadata.name,
      learnedAt: stamp,
      usedAt: stamp,
    });
    this.#options.logger.info(`learned protocol "${document.metadata.name}" ${document.hash}`);
    return true;
  }

  /** Evicts over the caps, oldest use first, sparing `keep` and what is in use; false when the caps cannot be met. */
  async #evict(keep: string | undefined): Promise<boolean> {
    const over = () => this.#learned.entries.size > this.#maxCount || this.#learned.bytes > this.#maxBytes;
    if (!over()) return true;
    const now = this.#now();
    for (const entry of [...this.#learned.entries.values()]) {
      if (!over()) break;
      if (entry.document.hash === keep || now - entry.usedAt < this.#liveMs) continue;
      // Another process sharing the memory may have used it since: its stored use time says so.
      const saved = (await this.#options.memory.get(`${PREFIX}${entry.document.hash}`).catch(() => undefined)) as
        Saved | undefined;
      const usedElsewhere = timeOf(saved?.usedAt);
      if (usedElsewhere !== undefined && now - usedElsewhere < this.#liveMs) continue;
      this.#learned.delete(entry.document.hash);
      await this.#options.memory.delete(`${PREFIX}${entry.document.hash}`);
      this.#options.logger.info(
        `evicted learned protocol "${entry.document.metadata.name}" ${entry.document.hash} (least recently used)`,
      );
    }
    return !over();
  }
}

function timeOf(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const time = Date.parse(value);
  return Number.isNaN(time) ? undefined : time;
}
