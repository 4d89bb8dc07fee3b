import { closeSync, constants, fstatSync, openSync, readdirSync, readSync, type Stats } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { AgentMemory } from '../memory/file.js';
import { watchFolder } from '../_files.js';
import { parseDocument, type ProtocolDocument } from './document.js';
import { resolveSources, type SourceOptions } from './sources.js';

/** A document the agent holds. */
export type KnownDocument = {
  document: ProtocolDocument;
  /** Where it came from: the agent's own folder, or a peer (sources, negotiation). */
  origin: 'local' | 'learned';
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
  /** Watch the folder for changes (default true). */
  watch?: boolean;
};

type FileEntry = { mtimeMs: number; size: number; hash?: string };

/**
 * Stats a file and reads it when `wanted` says so, through one descriptor: a path lookup fewer than a stat and a
 * `readFileSync`, which counts on the start-up path of an agent with many documents.
 */
function statAndReadSync(file: string, wanted: (info: Stats) => boolean): { info: Stats; raw: Buffer } | undefined {
  // Non-blocking, so a FIFO named `*.md` cannot hang the start (it is then skipped as no regular file).
  const descriptor = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    const info = fstatSync(descriptor);
    if (!wanted(info)) return undefined;
    const raw = Buffer.allocUnsafe(info.size);
    let length = 0;
    while (length < raw.length) {
      const read = readSync(descriptor, raw, length, raw.length - length, length);
      if (read === 0) break;
      length += read;
    }
    return { info, raw: length === raw.length ? raw : raw.subarray(0, length) };
  } finally {
    closeSync(descriptor);
  }
}

/**
 * The protocol documents an agent holds: its `protocols/*.md` (watched, so added, changed and removed files
 * show at once) and documents learned from peers (persisted in the agent's memory under `documents/`).
 * A changed or removed document stays known by hash, so conversations under way can finish.
 */
export class ProtocolRegistry {
  readonly #options: RegistryOptions;
  readonly #byHash = new Map<string, KnownDocument>();
  /** file name → what was last read from it. */
  readonly #files = new Map<string, FileEntry>();
  /** hash → local name, for the documents currently in the folder. */
  #current = new Map<string, string>();
  #unwatch: (() => void) | undefined;
  #scanning: Promise<void> | undefined;
  #rescan = false;

  constructor(options: RegistryOptions) {
    this.#options = options;
  }

  /** Loads the folder and the learned documents, then starts watching. */
  async start(): Promise<void> {
    await Promise.all([this.#scan(true), this.#loadLearned()]);
    if (this.#options.watch !== false) {
      this.#unwatch = watchFolder(this.#options.directory, () => void this.scan());
    }
  }

  /**
   * Loads the documents learned since, by another process sharing the memory (Redis) or before a restart; only
   * the keys of hashes not known yet are read.
   */
  async refreshLearned(): Promise<void> {
    return this.#loadLearned();
  }

  async #loadLearned(): Promise<void> {
    const keys = await this.#options.memory.keys('documents/');
    await Promise.all(
      keys.map(async (key) => {
        if (this.#byHash.has(key.slice('documents/'.length))) return;
        try {
          const saved = await this.#options.memory.get<{ text: string }>(key);
          if (!saved || typeof saved.text !== 'string') return;
          const document = parseDocument(saved.text, key);
          if (!this.#byHash.has(document.hash)) this.#byHash.set(document.hash, { document, origin: 'learned' });
        } catch (error) {
          this.#options.logger.warn(`learned document ${key} skipped: ${describeError(error)}`);
        }
      }),
    );
  }

  /** Re-reads the folder (the watcher calls it; tests may too). Concurrent calls coalesce. */
  async scan(): Promise<void> {
    return this.#scan(false);
  }

  /**
   * `initial`: the first scan, before the agent serves anything, reads synchronously, because a thread-pool round
   * trip per stat and read costs more than the read itself for small files (1,000 documents load ~4× faster).
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

  async #scanOnce(synchronous: boolean): Promise<void> {
    const { directory, logger } = this.#options;
    let names: string[];
    try {
      names = (synchronous ? readdirSync(directory) : await readdir(directory)).filter((name) => name.endsWith('.md') && !name.startsWith('.')).sort();
    } catch {
      names = [];
    }
    const current = new Map<string, string>();
    const seen = new Set(names);
    /** Whether a file must be read: new, or changed since it was last read (else it keeps its hash). */
    const mustRead = (fileName: string, info: Stats): boolean => {
      if (!info.isFile()) return false;
      const previous = this.#files.get(fileName);
      if (previous && previous.mtimeMs === info.mtimeMs && previous.size === info.size) {
        if (previous.hash) current.set(previous.hash, fileName.slice(0, -3));
        return false;
      }
      return true;
    };
    const take = (fileName: string, file: string, info: Stats, raw: Buffer) => {
      const previous = this.#files.get(fileName);
      const entry: FileEntry = { mtimeMs: info.mtimeMs, size: info.size };
      this.#files.set(fileName, entry);
      try {
        const document = parseDocument(raw, file);
        entry.hash = document.hash;
        const name = fileName.slice(0, -3);
        current.set(document.hash, name);
        this.#byHash.set(document.hash, { document, origin: 'local', name, file });
        if (previous) logger.info(`protocol ${fileName} changed: ${document.hash}`);
      } catch (error) {
        logger.warn(`protocol ${file} skipped: ${describeError(error).replace(/^AgoraError: /, '')}`);
      }
    };
    const skip = (file: string, error: unknown) => logger.warn(`protocol ${file} skipped: ${describeError(error)}`);
    if (synchronous) {
      // A plain loop: no promise per file on the start-up path.
      for (const fileName of names) {
        const file = join(directory, fileName);
        try {
          const read = statAndReadSync(file, (info) => mustRead(fileName, info));
          if (read) take(fileName, file, read.info, read.raw);
        } catch (error) {
          // A directory named `*.md`, as the asynchronous path's stat would have seen.
          if ((error as NodeJS.ErrnoException).code !== 'EISDIR') skip(file, error);
        }
      }
    } else {
      await Promise.all(
        names.map(async (fileName) => {
          const file = join(directory, fileName);
          try {
            const info = await stat(file);
            if (mustRead(fileName, info)) take(fileName, file, info, await readFile(file));
          } catch (error) {
            skip(file, error);
          }
        }),
      );
    }
    for (const fileName of [...this.#files.keys()]) {
      if (!seen.has(fileName)) this.#files.delete(fileName);
    }
    this.#current = current;
  }

  /** The documents currently in `protocols/`, with their names. */
  local(): { name: string; document: ProtocolDocument }[] {
    const result: { name: string; document: ProtocolDocument }[] = [];
    for (const [hash, name] of this.#current) {
      const known = this.#byHash.get(hash);
      if (known) result.push({ name, document: known.document });
    }
    return result.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Documents learned from peers. */
  learned(): ProtocolDocument[] {
    return [...this.#byHash.values()].filter((known) => known.origin === 'learned' && !this.#current.has(known.document.hash)).map((known) => known.document);
  }

  /** A document by hex hash, with its current local name when it is in the folder. */
  get(hash: string): KnownDocument | undefined {
    const known = this.#byHash.get(hash);
    if (!known) return undefined;
    const name = this.#current.get(hash);
    return name ? { ...known, origin: 'local', name } : { ...known, origin: known.origin === 'local' ? 'local' : 'learned' };
  }

  /**
   * A document by hash: known already, else fetched from the sources and remembered (spec §3).
   * Sources are only read when the hash is not known.
   */
  async resolve(hash: string, sources: readonly string[] | null | undefined): Promise<KnownDocument | undefined> {
    const known = this.get(hash);
    if (known) return known;
    const shared = await this.#options.memory.get<{ text: string }>(`documents/${hash}`);
    if (shared && typeof shared.text === 'string') {
      // Another process sharing this memory learned it.
      try {
        const document = parseDocument(shared.text, `documents/${hash}`);
        if (document.hash === hash) return this.#learn(document, false);
      } catch {
        // Fall through to the sources.
      }
    }
    if (!sources?.length) return undefined;
    const document = await resolveSources(hash, sources, { ...this.#options.sources, logger: this.#options.logger });
    if (!document) return undefined;
    return this.#learn(document, true);
  }

  async #learn(document: ProtocolDocument, persist: boolean): Promise<KnownDocument> {
    const known: KnownDocument = { document, origin: 'learned' };
    this.#byHash.set(document.hash, known);
    if (persist) {
      await this.#options.memory.set(`documents/${document.hash}`, { text: document.text, name: document.metadata.name, learnedAt: new Date().toISOString() });
      this.#options.logger.info(`learned protocol "${document.metadata.name}" ${document.hash}`);
    }
    return known;
  }

  /** Stops watching. */
  close(): void {
    this.#unwatch?.();
  }
}
