import { statSync, type Stats } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Slices } from '../_slices.js';
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import { parseDocument } from './document.js';
import { FolderDocuments, type LocalDocument } from './_folder-documents.js';
import type { ListedDocument } from './_listing.js';
import { isTransient, statAndReadSync, type FileRead } from './_read.js';
import { Revisits } from './_revisits.js';

export type { LocalDocument } from './_folder-documents.js';

/** Options of {@link ProtocolFolder}. */
export type ProtocolFolderOptions = {
  /** `<agent>/protocols`. */
  directory: string;
  logger: Logger;
  /** A file is read once unchanged for this long (ms). */
  settleMs: number;
  /** A replaced version unused for this long (ms) is forgotten. */
  liveMs: number;
  /**
   * While the folder is first read, a file still being written holds the load this long at most (ms, default 5,000):
   * then its last complete read is taken, or (every read torn) it is read once it settles, the load done without it.
   */
  loadWaitMs?: number;
  now: () => number;
};

type FileEntry = { mtimeMs: number; size: number; hash?: string };

/** How long a file that failed for want of resources (EMFILE, EAGAIN…) waits before it is read again, ms (doubling). */
const RETRY_MS = 100;
const RETRY_MAX_MS = 5000;
/** How long a file being written may hold the first load, ms (see ProtocolFolderOptions.loadWaitMs). */
const LOAD_WAIT_MS = 5000;

/** Whether a folder entry can be a protocol document: `*.md`, not hidden (an editor's `.x.md.swp`, `x.md~` are not). */
export function isDocumentName(name: string): boolean {
  return name.endsWith('.md') && !name.startsWith('.') && name.length > 3;
}

/**
 * The `protocols/*.md` of an agent, kept up to date by the file that changed: a file is registered once it has
 * settled (writers pause mid-file), and a changed or removed one leaves the current set at once, its old text kept
 * only while conversations use it. A whole scan (the start, a change of unknown name) reads one file at a time, in
 * slices of a few ms with a turn of the event loop between them; a file that fails for want of resources keeps what
 * was last read from it and is tried again.
 */
export class ProtocolFolder {
  readonly #options: ProtocolFolderOptions;
  /** The documents the files hold, by hash and by name. */
  readonly #documents: FolderDocuments;
  /** file name → what was last read from it. */
  readonly #files = new Map<string, FileEntry>();
  /** file name → the hash the log last gave it. */
  readonly #said = new Map<string, string>();
  #notifiedVersion = 0;
  /** File names to look at, and whether the whole folder must be. */
  readonly #queued = new Set<string>();
  #fullScan = false;
  #initial = false;
  #working: Promise<void> | undefined;
  /** Files to look at again: unsettled, or failed for want of resources. */
  readonly #later: Revisits;
  #closed = false;
  readonly #listeners = new Set<() => void>();
  /** Whether a whole scan has gone through the listing; the first load, and how to end it. */
  #scannedOnce = false;
  #loading = true;
  #endLoad!: () => void;
  readonly #loaded = new Promise<void>((resolve) => (this.#endLoad = resolve));

  constructor(options: ProtocolFolderOptions) {
    this.#options = options;
    this.#documents = new FolderDocuments(options.directory);
    this.#later = new Revisits(options.now, (due) => {
      for (const name of due) this.#queued.add(name);
      return this.#work();
    });
  }

  /**
   * Whether the folder is still being read for the first time: its first whole scan is not done, or a file it met
   * waits to be read again (it failed for want of resources, or was being written). A lookup that misses meanwhile
   * should wait for {@link loaded}.
   */
  get loading(): boolean {
    return this.#loading;
  }

  /** Resolves once the first load is done (or the folder is closed): every document then in the folder is listed. */
  get loaded(): Promise<void> {
    return this.#loaded;
  }

  /** Whether a hash is a document currently in the folder. */
  isCurrent(hash: string): boolean {
    return this.#documents.isCurrent(hash);
  }

  /** A document by hash: current, or (with `retired`) a replaced version still kept. */
  find(hash: string, retired = false): LocalDocument | undefined {
    return this.#documents.find(hash, retired);
  }

  /**
   * The documents currently in the folder, with their names, by name. Sorted once, then kept sorted by each change;
   * each change hands out a new array, so a listing already handed out never moves.
   */
  list(): readonly ListedDocument[] {
    return this.#documents.list();
  }

  /** A number that changes whenever the listing does (for answers built once per change). */
  get version(): number {
    return this.#documents.version;
  }

  /** Reads the whole folder; the first (`initial`) scan takes files as they are. Concurrent calls coalesce. */
  scan(initial = false): Promise<void> {
    this.#fullScan = true;
    this.#initial ||= initial;
    return this.#work();
  }

  /** Looks at the named entries of the folder only (what a watcher reported); names of no document are ignored. */
  changed(names: Iterable<string>): Promise<void> {
    for (const name of names) if (isDocumentName(name)) this.#queued.add(name);
    return this.#work();
  }

  /** Calls `listener` after work that changed which documents are in the folder; returns how to stop. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Stops the timer of files to look at again; whoever waits for the first load is let go. */
  close(): void {
    this.#closed = true;
    this.#later.close();
    this.#finishLoad();
  }

  #finishLoad(): void {
    if (!this.#loading) return;
    this.#loading = false;
    this.#endLoad();
  }

  /**
   * The first load ends once a whole scan is done and no file waits to be looked at again: one that failed for want
   * of resources, or was written to while it was read (then read once it has settled, or after the load's bound).
   */
  #checkLoaded(): void {
    if (this.#loading && this.#scannedOnce && this.#later.allWaitedLonger(this.#loadWaitMs)) this.#finishLoad();
  }

  get #loadWaitMs(): number {
    return this.#options.loadWaitMs ?? LOAD_WAIT_MS;
  }

  /** Whether a file being written has held the first load for its bound: its next complete read is taken as it is. */
  #waitedOut(fileName: string): boolean {
    const wait = this.#later.get(fileName);
    return this.#loading && wait !== undefined && this.#options.now() - wait.since >= this.#loadWaitMs;
  }

  #work(): Promise<void> {
    this.#working ??= this.#drain().finally(() => {
      this.#working = undefined;
    });
    return this.#working;
  }

  async #drain(): Promise<void> {
    while (this.#fullScan || this.#queued.size > 0) {
      if (this.#fullScan) {
        const initial = this.#initial;
        this.#fullScan = false;
        this.#initial = false;
        this.#queued.clear();
        await this.#scanAll(initial);
      } else {
        const names = [...this.#queued];
        this.#queued.clear();
        await this.#look(names, false);
      }
    }
    this.#documents.dropRetired(this.#options.now(), this.#options.liveMs);
    if (this.#documents.version !== this.#notifiedVersion) {
      this.#notifiedVersion = this.#documents.version;
      for (const listener of this.#listeners) listener();
    }
    this.#checkLoaded();
  }

  async #scanAll(initial: boolean): Promise<void> {
    let names: string[];
    try {
      names = (await readdir(this.#options.directory)).filter(isDocumentName);
    } catch (error) {
      // The listing itself failed for want of resources: keep what is listed and try again.
      if (isTransient(error)) return this.#retryScan();
      names = [];
    }
    await this.#look(names, initial);
    if (this.#closed) return;
    const present = new Set(names);
    for (const fileName of [...this.#files.keys()]) if (!present.has(fileName)) this.#set(fileName, undefined);
    this.#scannedOnce = true;
  }

  /** Looks at each named file, a slice of a few ms at a time. */
  async #look(names: readonly string[], initial: boolean): Promise<void> {
    const slices = new Slices();
    for (const fileName of names) {
      if (this.#closed) return;
      this.#lookAt(fileName, initial);
      if (slices.due) await slices.next();
    }
  }

  /** Brings one file's entry up to date: unchanged, settled and read, waiting to settle, gone, or to be retried. */
  #lookAt(fileName: string, initial: boolean): void {
    const { directory, settleMs, now } = this.#options;
    const file = join(directory, fileName);
    const previous = this.#files.get(fileName);
    const wait = this.#later.get(fileName);
    // At the start nothing is known and files are taken as they are: the read's own fstat is the only stat.
    if (!initial || previous) {
      let info: Stats | undefined;
      try {
        info = statSync(file, { throwIfNoEntry: false });
      } catch (error) {
        return this.#failed(fileName, file, error);
      }
      if (!info || !info.isFile()) return this.#set(fileName, undefined);
      if (previous && previous.mtimeMs === info.mtimeMs && previous.size === info.size && wait?.retryMs === undefined)
        return;
      // Changed and still being written: its old version leaves the listing now, the new one waits to settle (at
      // the start, for the load's bound at most).
      const age = now() - info.mtimeMs;
      if (!initial && age < settleMs && !this.#waitedOut(fileName)) {
        this.#set(fileName, { mtimeMs: Number.NaN, size: -1 });
        return this.#later.schedule(fileName, Math.min(settleMs, settleMs - age));
      }
    }
    let read: FileRead | undefined;
    try {
      read = statAndReadSync(file, (opened) => opened.isFile());
    } catch (error) {
      return this.#failed(fileName, file, error);
    }
    if (!read) return this.#set(fileName, undefined);
    if (read.changed) return this.#later.schedule(fileName, settleMs);
    this.#later.delete(fileName);
    this.#take(fileName, file, read);
  }

  #take(fileName: string, file: string, read: FileRead): void {
    const entry: FileEntry = { mtimeMs: read.info.mtimeMs, size: read.info.size };
    try {
      const document = parseDocument(read.raw, file);
      entry.hash = document.hash;
      // The same text under a second name keeps the first one's entry.
      this.#documents.read(fileName, document);
    } catch (error) {
      this.#options.logger.warn(`protocol ${file} skipped: ${describeError(error).replace(/^AgoraError: /, '')}`);
    }
    this.#set(fileName, entry);
  }

  /** A read failed: for want of resources the file keeps what was last read and is tried again; else it is no document. */
  #failed(fileName: string, file: string, error: unknown): void {
    if (isTransient(error)) {
      const retryMs = Math.min(RETRY_MAX_MS, (this.#later.get(fileName)?.retryMs ?? RETRY_MS / 2) * 2);
      return this.#later.schedule(fileName, retryMs, retryMs);
    }
    // A directory named `*.md` is no protocol; a file removed between the listing and the read is gone.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'ENOENT')
      this.#options.logger.warn(`protocol ${file} skipped: ${describeError(error)}`);
    this.#set(fileName, undefined);
  }

  /**
   * Records what a file holds now (`undefined`: nothing, it left), moving it in or out of the listing; after the first
   * load, a line says what changed (a file being written says so once it has settled).
   */
  #set(fileName: string, entry: FileEntry | undefined): void {
    const previous = this.#files.get(fileName)?.hash;
    if (!entry) this.#later.delete(fileName);
    if (entry) this.#files.set(fileName, entry);
    else this.#files.delete(fileName);
    if (previous !== entry?.hash) this.#documents.move(fileName, previous, entry?.hash);
    if (entry && Number.isNaN(entry.mtimeMs)) return;
    const said = this.#said.get(fileName);
    if (said === entry?.hash) return;
    if (entry?.hash) this.#said.set(fileName, entry.hash);
    else this.#said.delete(fileName);
    if (this.#loading) return;
    const logger = this.#options.logger;
    if (!entry?.hash) logger.info(`protocol ${fileName} removed${said ? ` (was ${said})` : ''}`);
    else logger.info(`protocol ${fileName} ${said ? 'changed' : 'added'}: ${entry.hash}`);
  }

  #retryScan(): void {
    if (this.#closed) return;
    setTimeout(() => void this.scan(), RETRY_MS).unref?.();
  }
}
