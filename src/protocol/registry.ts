import type { Logger } from '../log.js';
import { DEFAULT_CONVERSATION_TTL_MS } from '../_defaults.js';
import type { AgentMemory } from '../memory/file.js';
import { watchFolder } from '../_files.js';
import { parseDocument, type ProtocolDocument } from './document.js';
import { LearnedDocuments, type LearnedLimits } from './learned.js';
import { ProtocolFolder } from './folder.js';
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
  /**
   * A whole scan of the folder this often (ms), the safety net for a watch event the platform lost (an overflowed
   * inotify queue is not reported): it stats each file and reads only those whose size or time changed. Default
   * none; 0 none.
   */
  rescanMs?: number;
  /** A file is read once unchanged for this long (ms): writers pause mid-file. Default 500. */
  settleMs?: number;
  /** Clock in Unix milliseconds (compared with files' modification times). */
  now?: () => number;
};

/**
 * The protocol documents an agent holds: its `protocols/*.md` (watched; a file is registered once it has settled,
 * and a changed or removed one leaves the listing at once, its old text kept only for conversations under way) and
 * documents learned from peers (see {@link LearnedDocuments}).
 */
export class ProtocolRegistry {
  readonly #options: RegistryOptions;
  readonly #now: () => number;
  readonly #folder: ProtocolFolder;
  readonly #learned: LearnedDocuments;
  readonly #fetching = new Map<string, Promise<ProtocolDocument | undefined>>();
  #unwatch: (() => void) | undefined;
  #rescans: NodeJS.Timeout | undefined;

  constructor(options: RegistryOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    const liveMs = options.learned?.liveMs ?? DEFAULT_CONVERSATION_TTL_MS;
    this.#folder = new ProtocolFolder({
      directory: options.directory,
      logger: options.logger,
      settleMs: options.settleMs ?? 500,
      liveMs,
      now: this.#now,
    });
    this.#learned = new LearnedDocuments({
      ...options.learned,
      memory: options.memory,
      logger: options.logger,
      now: this.#now,
    });
  }

  /**
   * Starts watching, then loads the folder and the learned documents. With `wait: false` it resolves once the
   * learned documents are loaded and the folder is being read: see {@link loading} and {@link loaded}.
   */
  async start(options: { wait?: boolean } = {}): Promise<void> {
    if (this.#options.watch !== false) {
      // Watched before the first scan, so a change made while it runs is not missed. A change updates the files that
      // changed; one of unknown name (or a lost watch) rereads the folder.
      this.#unwatch = watchFolder(
        this.#options.directory,
        (names) => void (names ? this.#folder.changed(names) : this.scan()),
      );
    }
    const scanning = this.#folder.scan(true);
    const rescanMs = this.#options.rescanMs ?? 0;
    if (rescanMs > 0) {
      // setTimeout takes at most 2^31 - 1 ms (~24.8 days); beyond, Node would fire it at once.
      this.#rescans = setInterval(() => void (this.#folder.loading || this.scan()), Math.min(rescanMs, 2 ** 31 - 1));
      this.#rescans.unref?.();
    }
    // Loaded: the scan is done and no file it met waits to be retried for want of resources.
    await Promise.all([
      options.wait === false ? undefined : scanning.then(() => this.#folder.loaded),
      this.refreshLearned(),
    ]);
  }

  /** Whether `protocols/` is still being read for the first time (a lookup that misses waits for it). */
  get loading(): boolean {
    return this.#folder.loading;
  }

  /** Resolves once `protocols/` has been read for the first time (or the registry is closed). */
  loaded(): Promise<void> {
    return this.#folder.loaded;
  }

  /** Loads the documents learned since, by another process sharing the memory (Redis) or before a restart. */
  async refreshLearned(): Promise<void> {
    await this.#learned.load((hash) => this.#folder.isCurrent(hash));
  }

  /** Re-reads the folder (the watcher calls it; tests may too). Concurrent calls coalesce. */
  async scan(): Promise<void> {
    return this.#folder.scan();
  }

  /** The documents currently in `protocols/`, with their names, by name (one array per change: do not modify it). */
  local(): readonly { name: string; document: ProtocolDocument }[] {
    return this.#folder.list();
  }

  /** A number that changes whenever the documents in `protocols/` do. */
  get localVersion(): number {
    return this.#folder.version;
  }

  /** A number that changes whenever a learned document comes or goes. */
  get learnedVersion(): number {
    return this.#learned.version;
  }

  /** Documents learned from peers and chosen (stored and served), least recently used first. */
  learned(): ProtocolDocument[] {
    return this.#learned.list().filter((document) => !this.#folder.isCurrent(document.hash));
  }

  /** Count and bytes of the learned documents, and candidates held. */
  learnedSize(): { count: number; bytes: number; candidates: number } {
    return this.#learned.size();
  }

  /**
   * A document in the folder or learned, by hex hash (not a replaced version, not a candidate), found without waiting:
   * while the folder is first read (see {@link loading}) a miss is not final; {@link resolve} waits.
   */
  get(hash: string): KnownDocument | undefined {
    const local = this.#folder.find(hash);
    if (local) return { document: local.document, origin: 'local', name: local.name, file: local.file };
    const learned = this.#learned.peek(hash);
    return learned ? { document: learned, origin: 'learned' } : undefined;
  }

  /** The text served at `/protocols/<hash>`: folder, replaced versions still in use, and learned documents. */
  text(hash: string): string | undefined {
    return (this.#folder.find(hash, true) ?? this.get(hash))?.document.text;
  }

  /**
   * The document of a new query (spec §3): in the folder or learned (marked used), else learned by another process
   * sharing the memory, else read from the sources as a *candidate*, which costs nothing lasting until {@link adopt}.
   */
  async resolve(hash: string, sources: readonly string[] | null | undefined): Promise<KnownDocument | undefined> {
    const known = this.held(hash);
    if (known) return known;
    // While the folder is first read, a miss may be a document the scan has not reached yet.
    if (this.#folder.loading) {
      await this.#folder.loaded;
      const loaded = this.held(hash);
      if (loaded) return loaded;
    }
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
      fetching = resolveSources(hash, sources, { ...this.#options.sources, logger: this.#options.logger }).finally(() =>
        this.#fetching.delete(hash),
      );
      this.#fetching.set(hash, fetching);
    }
    const document = await fetching;
    if (!document) return undefined;
    this.#learned.hold(document);
    return { document, origin: 'candidate' };
  }

  /**
   * A document in the folder or learned (marked used), found without waiting: {@link resolve}'s first step, which
   * the hot path takes synchronously (each `await` on a query's way costs a turn of the microtask queue). While the
   * folder is first read a miss is not final: {@link resolve} waits for the load.
   */
  held(hash: string): KnownDocument | undefined {
    const local = this.#folder.find(hash);
    if (local) {
      local.usedAt = this.#now();
      return { document: local.document, origin: 'local', name: local.name, file: local.file };
    }
    // While the folder is first read, a learned document may be one of its files not read yet (answered by its
    // routine once it is): the lookup waits with the misses.
    if (this.#folder.loading) return undefined;
    const learned = this.#learned.peek(hash);
    if (!learned) return undefined;
    this.#learned.use(hash);
    return { document: learned, origin: 'learned' };
  }

  /** The document of a turn in a conversation under way: also a replaced version of a local file. */
  async forConversation(
    hash: string,
    sources: readonly string[] | null | undefined,
  ): Promise<KnownDocument | undefined> {
    const local = this.#folder.find(hash, true);
    if (local && !this.#folder.isCurrent(hash)) {
      local.usedAt = this.#now();
      return { document: local.document, origin: 'local', name: local.name, file: local.file };
    }
    return this.resolve(hash, sources);
  }

  /**
   * The agent chose to serve a candidate (a routine answers it, or the LLM judged it suitable): stores it and lists
   * it. Returns it as learned, or still a candidate when the learned documents are full and all in use.
   */
  async adopt(known: KnownDocument): Promise<KnownDocument> {
    if (known.origin !== 'candidate') return known;
    return (await this.#learned.adopt(known.document)) ? { document: known.document, origin: 'learned' } : known;
  }

  /** Calls `listener` when the documents in `protocols/` change (added, removed, replaced); returns how to stop. */
  onLocalChange(listener: () => void): () => void {
    return this.#folder.onChange(listener);
  }

  /** Stops watching and rescanning. */
  close(): void {
    clearInterval(this.#rescans);
    this.#folder.close();
    this.#unwatch?.();
  }
}
