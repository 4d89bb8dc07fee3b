import type { Stats } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { AgentMemory } from '../memory/file.js';
import { watchFolder } from '../_files.js';
import { parseDocument, type ProtocolDocument } from './document.js';
import { LearnedDocuments, type LearnedLimits } from './learned.js';
import { statAndRead, statAndReadSync, type FileRead } from './_read.js';
import { resolveSources, type SourceOptions } from './sources.js';

/** A document the agent holds. */
export type KnownDocument = {
  document: ProtocolDocument;
  /**
   * Where it came from: the agent's own folder; a peer, chosen (a routine answers it or the LLM judged it suitable:
   * stored and served); or a peer, not chosen yet (held for the query that brought it, neither stored nor served).
   */
  origin: 'local' | 'learned' | 'candidate';
  /** For local documents: the file's name without `.md`, which is also its routine's name. */
  name?: string;
  file?: string;
};

/** Options of the registry. */
export type RegistryOptions = {
  /** `<agent>/protocols`. */
  directory: string;
  memory: AgentMemory;
  logger: Logger;
  sources?: SourceOptions;
  /** Bounds on documents learned from peers (count, bytes, what counts as in use). */
  learned?: LearnedLimits;
  /** Watch the folder for changes (default true). */
  watch?: boolean;
  /** A file is read once unchanged for this long (ms): writers pause mid-file. Default 500. */
  settleMs?: number;
  /** Clock in Unix milliseconds (compared with files' modification times). */
  now?: () => number;
};

type FileEntry = { mtimeMs: number; size: number; hash?: string };

/**
 * The protocol documents an agent holds: its `protocols/*.md` (watched; a file is registered once it has settled,
 * and a changed or removed one leaves the listing at once, its old text kept only for conversations under way) and
 * documents learned from peers (see {@link LearnedDocuments}).
 */
export class ProtocolRegistry {
  readonly #options: RegistryOptions;
  readonly #now: () => number;
  readonly #settleMs: number;
  readonly #liveMs: number;
  /** Local documents by hash: those in the folder, and replaced ones still in use. */
  readonly #local = new Map<string, KnownDocument & { usedAt?: number }>();
  readonly #learned: LearnedDocuments;
  /** file name → what was last read from it. */
  readonly #files = new Map<string, FileEntry>();
  /** hash → local name, for the documents currently in the folder. */
  #current = new Map<string, string>();
  readonly #fetching = new Map<string, Promise<ProtocolDocument | undefined>>();
  #unwatch: (() => void) | undefined;
  #scanning: Promise<void> | undefined;
  #rescan = false;
  #settleTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: RegistryOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#settleMs = options.settleMs ?? 500;
    this.#liveMs = options.learned?.liveMs ?? 300_000;
    this.#learned = new LearnedDocuments({ ...options.learned, memory: options.memory, logger: options.logger, now: this.#now });
  }

  /** Loads the folder and the learned documents, then starts watching. */
  async start(): Promise<void> {
    await Promise.all([this.#scan(true), this.refreshLearned()]);
    if (this.#options.watch !== false) {
      this.#unwatch = watchFolder(this.#options.directory, () => void this.scan());
    }
  }

  /** Loads the documents learned since, by another process sharing the memory (Redis) or before a restart. */
  async refreshLearned(): Promise<void> {
    await this.#learned.load((hash) => this.#current.has(hash));
  }

  /** Re-reads the folder (the watcher calls it; tests may too). Concurrent calls coalesce. */
  async scan(): Promise<void> {
    return this.#scan(false);
  }

  /**
   * `initial`: the first scan, before the agent serves anything, reads synchronously (a thread-pool round trip per
   * stat and read costs more than the read itself for small files: 1,000 documents load ~4× faster) and takes files
   * as they are; later scans wait for a file to settle.
   */
  #scan(initial: boolean): Promise<void> {
    if (this.#scanning) {
      this.#rescan = true;
      return this.#scanning;
    }
    this.#scanning = (async () => {
      let synchronous = initial;
      do {
        this.#rescan = false;
        await this.#scanOnce(synchronous);
        synchronous = false;
      } while (this.#rescan);
    })().finally(() => {
      this.#scanning = undefined;
    });
    return this.#scanning;
  }

  /** Scans again once the youngest unsettled file should have settled. */
  #scanLater(delayMs: number): void {
    if (this.#closed || this.#settleTimer) return;
    this.#settleTimer = setTimeout(() => {
      this.#settleTimer = undefined;
      void this.scan();
    }, Math.max(1, Math.ceil(delayMs)));
    this.#settleTimer.unref?.();
  }

  async #scanOnce(synchronous: boolean): Promise<void> {
    const { directory, logger } = this.#options;
    let names: string[];
    try {
      names = (synchronous ? readdirSync(directory) : await readdir(directory)).filter((name) => name.endsWith('.md') && !name.startsWith('.')).sort();
    } catch {
      names = [];
    }
    const now = this.#now();
    const current = new Map<string, string>();
    let unsettled: number | undefined;
    const waitFor = (delayMs: number) => (unsettled = Math.min(unsettled ?? delayMs, delayMs));
    /** Whether a file must be read: new or changed since it was last read, and settled (else it keeps its hash). */
    const mustRead = (fileName: string, info: Stats): boolean => {
      if (!info.isFile()) return false;
      const previous = this.#files.get(fileName);
      if (previous && previous.mtimeMs === info.mtimeMs && previous.size === info.size) {
        if (previous.hash) current.set(previous.hash, fileName.slice(0, -3));
        return false;
      }
      // Changed and still being written: its old version leaves the listing now, the new one waits to settle.
      const age = now - info.mtimeMs;
      if (!synchronous && age < this.#settleMs) {
        waitFor(this.#settleMs - age);
        return false;
      }
      return true;
    };
    const take = (fileName: string, file: string, read: FileRead) => {
      if (read.changed) return waitFor(this.#settleMs);
      const previous = this.#files.get(fileName);
      const entry: FileEntry = { mtimeMs: read.info.mtimeMs, size: read.info.size };
      this.#files.set(fileName, entry);
      try {
        const document = parseDocument(read.raw, file);
        entry.hash = document.hash;
        const name = fileName.slice(0, -3);
        current.set(document.hash, name);
        this.#local.set(document.hash, { document, origin: 'local', name, file });
        if (previous) logger.info(`protocol ${fileName} changed: ${document.hash}`);
      } catch (error) {
        logger.warn(`protocol ${file} skipped: ${describeError(error).replace(/^AgoraError: /, '')}`);
      }
    };
    const skip = (file: string, error: unknown) => {
      // A directory named `*.md` is no protocol; a file removed between the listing and the read is gone.
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EISDIR' && code !== 'ENOENT') logger.warn(`protocol ${file} skipped: ${describeError(error)}`);
    };
    if (synchronous) {
      // A plain loop: no promise per file on the start-up path.
      for (const fileName of names) {
        const file = join(directory, fileName);
        try {
          const read = statAndReadSync(file, (info) => mustRead(fileName, info));
          if (read) take(fileName, file, read);
        } catch (error) {
          skip(file, error);
        }
      }
    } else {
      await Promise.all(
        names.map(async (fileName) => {
          const file = join(directory, fileName);
          try {
            const read = await statAndRead(file, (info) => mustRead(fileName, info));
            if (read) take(fileName, file, read);
          } catch (error) {
            skip(file, error);
          }
        }),
      );
    }
    const seen = new Set(names);
    for (const fileName of [...this.#files.keys()]) {
      if (!seen.has(fileName)) this.#files.delete(fileName);
    }
    this.#current = current;
    this.#dropRetired(now);
    if (unsettled !== undefined) this.#scanLater(unsettled + 20);
  }

  /** Forgets replaced or removed versions no conversation has used within the live window. */
  #dropRetired(now: number): void {
    for (const [hash, known] of this.#local) {
      if (this.#current.has(hash)) continue;
      if (known.usedAt === undefined || now - known.usedAt >= this.#liveMs) this.#local.delete(hash);
    }
  }

  /** The documents currently in `protocols/`, with their names. */
  local(): { name: string; document: ProtocolDocument }[] {
    const result: { name: string; document: ProtocolDocument }[] = [];
    for (const [hash, name] of this.#current) {
      const known = this.#local.get(hash);
      if (known) result.push({ name, document: known.document });
    }
    return result.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Documents learned from peers and chosen (stored and served), least recently used first. */
  learned(): ProtocolDocument[] {
    return this.#learned.list().filter((document) => !this.#current.has(document.hash));
  }

  /** Count and bytes of the learned documents, and candidates held. */
  learnedSize(): { count: number; bytes: number; candidates: number } {
    return this.#learned.size();
  }

  /** A document in the folder or learned, by hex hash (not a replaced version, not a candidate). */
  get(hash: string): KnownDocument | undefined {
    const name = this.#current.get(hash);
    const local = name === undefined ? undefined : this.#local.get(hash);
    if (local) return { document: local.document, origin: 'local', name, ...(local.file ? { file: local.file } : {}) };
    const learned = this.#learned.peek(hash);
    return learned ? { document: learned, origin: 'learned' } : undefined;
  }

  /** The text served at `/protocols/<hash>`: folder, replaced versions still in use, and learned documents. */
  text(hash: string): string | undefined {
    return (this.#local.get(hash) ?? this.get(hash))?.document.text;
  }

  /**
   * The document of a new query (spec §3): in the folder or learned (marked used), else learned by another process
   * sharing the memory, else read from the sources as a *candidate*, which costs nothing lasting until {@link adopt}.
   */
  async resolve(hash: string, sources: readonly string[] | null | undefined): Promise<KnownDocument | undefined> {
    const known = this.get(hash);
    if (known) return this.#used(known);
    const shared = await this.#options.memory.get<{ text: string }>(`documents/${hash}`);
    if (shared && typeof shared.text === 'string') {
      await this.refreshLearned().catch(() => undefined);
      const learned = this.#learned.use(hash);
      if (learned) return { document: learned, origin: 'learned' };
    }
    const held = this.#learned.candidate(hash);
    if (held) return { document: held, origin: 'candidate' };
    if (!sources?.length) return undefined;
    let fetching = this.#fetching.get(hash);
    if (!fetching) {
      fetching = resolveSources(hash, sources, { ...this.#options.sources, logger: this.#options.logger }).finally(() => this.#fetching.delete(hash));
      this.#fetching.set(hash, fetching);
    }
    const document = await fetching;
    if (!document) return undefined;
    this.#learned.hold(document);
    return { document, origin: 'candidate' };
  }

  /** The document of a turn in a conversation under way: also a replaced version of a local file. */
  async forConversation(hash: string, sources: readonly string[] | null | undefined): Promise<KnownDocument | undefined> {
    const local = this.#local.get(hash);
    if (local && !this.#current.has(hash)) {
      local.usedAt = this.#now();
      return { document: local.document, origin: 'local', ...(local.name ? { name: local.name } : {}) };
    }
    return this.resolve(hash, sources);
  }

  /** Marks a document used: a local one stays answerable by conversations under way once replaced. */
  #used(known: KnownDocument): KnownDocument {
    if (known.origin === 'local') {
      const local = this.#local.get(known.document.hash);
      if (local) local.usedAt = this.#now();
    } else {
      this.#learned.use(known.document.hash);
    }
    return known;
  }

  /**
   * The agent chose to serve a candidate (a routine answers it, or the LLM judged it suitable): stores it and lists
   * it. Returns it as learned, or still a candidate when the learned documents are full and all in use.
   */
  async adopt(known: KnownDocument): Promise<KnownDocument> {
    if (known.origin !== 'candidate') return known;
    return (await this.#learned.adopt(known.document)) ? { document: known.document, origin: 'learned' } : known;
  }

  /** Stops watching. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#settleTimer);
    this.#unwatch?.();
  }
}
