import { statSync, type Stats } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Slices } from '../_slices.js';
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import { parseDocument, type ProtocolDocument } from './document.js';
import { SortedListing, type ListedDocument } from './_listing.js';
import { isTransient, statAndReadSync, type FileRead } from './_read.js';

/** A document of the folder: current, or replaced and kept while a conversation uses it. */
export type LocalDocument = { document: ProtocolDocument; name: string; file: string; usedAt?: number };

/** Options of {@link ProtocolFolder}. */
export type ProtocolFolderOptions = {
  /** `<agent>/protocols`. */
  directory: string;
  logger: Logger;
  /** A file is read once unchanged for this long (ms). */
  settleMs: number;
  /** A replaced version unused for this long (ms) is forgotten. */
  liveMs: number;
  now: () => number;
};

type FileEntry = { mtimeMs: number; size: number; hash?: string };

/** How long a file that failed for want of resources (EMFILE, EAGAIN…) waits before it is read again, ms (doubling). */
const RETRY_MS = 100;
const RETRY_MAX_MS = 5000;

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
  /** By hash: the documents in the folder, and replaced ones still in use. */
  readonly #local = new Map<string, LocalDocument>();
  /** file name → what was last read from it. */
  readonly #files = new Map<string, FileEntry>();
  /** hash → the file names holding it (almost always one), for the documents currently in the folder. */
  readonly #current = new Map<string, string[]>();
  /** The listing kept sorted by name (once first asked for). */
  readonly #listing = new SortedListing();
  /** Bumped by every change of the listing. */
  #version = 0;
  #notifiedVersion = 0;
  /** File names to look at, and whether the whole folder must be. */
  readonly #queued = new Set<string>();
  #fullScan = false;
  #initial = false;
  #working: Promise<void> | undefined;
  /** file name → when to look at it again (unsettled, or failed for want of resources), and its retry delay. */
  readonly #later = new Map<string, { at: number; retryMs?: number }>();
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  /** Hashes that left the folder, kept in `#local` while conversations use them. */
  readonly #retired = new Set<string>();
  #closed = false;
  readonly #listeners = new Set<() => void>();
  /** Whether a whole scan has gone through the listing; the first load, and how to end it. */
  #scannedOnce = false;
  #loading = true;
  #endLoad!: () => void;
  readonly #loaded = new Promise<void>((resolve) => (this.#endLoad = resolve));

  constructor(options: ProtocolFolderOptions) {
    this.#options = options;
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
    return this.#current.has(hash);
  }

  /** A document by hash: current, or (with `retired`) a replaced version still kept. */
  find(hash: string, retired = false): LocalDocument | undefined {
    return retired || this.#current.has(hash) ? this.#local.get(hash) : undefined;
  }

  /**
   * The documents currently in the folder, with their names, by name. Sorted once, then kept sorted by each change;
   * each change hands out a new array, so a listing already handed out never moves.
   */
  list(): readonly ListedDocument[] {
    return this.#listing.get(() => {
      const entries: ListedDocument[] = [];
      for (const [hash, [fileName]] of this.#current) {
        const known = this.#local.get(hash);
        if (known && fileName) entries.push({ name: fileName.slice(0, -3), document: known.document });
      }
      return entries;
    });
  }

  /** Keeps the sorted listing in step: `fileName` leaves it, or enters it with `hash`'s document. */
  #relist(fileName: string, hash: string | undefined): void {
    this.#listing.set(fileName.slice(0, -3), hash === undefined ? undefined : this.#local.get(hash)?.document);
  }

  /** A number that changes whenever the listing does (for answers built once per change). */
  get version(): number {
    return this.#version;
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
    clearTimeout(this.#timer);
    this.#finishLoad();
  }

  #finishLoad(): void {
    if (!this.#loading) return;
    this.#loading = false;
    this.#endLoad();
  }

  /**
   * The first load ends once a whole scan is done and no file waits to be looked at again: one that failed for want
   * of resources, or was written to while it was read (then read once it has settled).
   */
  #checkLoaded(): void {
    if (this.#loading && this.#scannedOnce && this.#later.size === 0) this.#finishLoad();
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
    this.#dropRetired(this.#options.now());
    if (this.#version !== this.#notifiedVersion) {
      this.#notifiedVersion = this.#version;
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
      // Changed and still being written: its old version leaves the listing now, the new one waits to settle.
      const age = now() - info.mtimeMs;
      if (!initial && age < settleMs) {
        this.#set(fileName, { mtimeMs: Number.NaN, size: -1 });
        return this.#lookLater(fileName, Math.min(settleMs, settleMs - age));
      }
    }
    let read: FileRead | undefined;
    try {
      read = statAndReadSync(file, (opened) => opened.isFile());
    } catch (error) {
      return this.#failed(fileName, file, error);
    }
    if (!read) return this.#set(fileName, undefined);
    if (read.changed) return this.#lookLater(fileName, settleMs);
    this.#later.delete(fileName);
    this.#take(fileName, file, read);
  }

  #take(fileName: string, file: string, read: FileRead): void {
    const entry: FileEntry = { mtimeMs: read.info.mtimeMs, size: read.info.size };
    const known = this.#files.get(fileName)?.hash !== undefined;
    try {
      const document = parseDocument(read.raw, file);
      entry.hash = document.hash;
      // The same text under a second name keeps the first one's entry.
      if (!this.#current.has(document.hash))
        this.#local.set(document.hash, { document, name: fileName.slice(0, -3), file });
      if (known) this.#options.logger.info(`protocol ${fileName} changed: ${document.hash}`);
    } catch (error) {
      this.#options.logger.warn(`protocol ${file} skipped: ${describeError(error).replace(/^AgoraError: /, '')}`);
    }
    this.#set(fileName, entry);
  }

  /** A read failed: for want of resources the file keeps what was last read and is tried again; else it is no document. */
  #failed(fileName: string, file: string, error: unknown): void {
    if (isTransient(error)) {
      const retryMs = Math.min(RETRY_MAX_MS, (this.#later.get(fileName)?.retryMs ?? RETRY_MS / 2) * 2);
      return this.#lookLater(fileName, retryMs, retryMs);
    }
    // A directory named `*.md` is no protocol; a file removed between the listing and the read is gone.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'ENOENT')
      this.#options.logger.warn(`protocol ${file} skipped: ${describeError(error)}`);
    this.#set(fileName, undefined);
  }

  /** Records what a file holds now (`undefined`: nothing, it left), moving it in or out of the listing. */
  #set(fileName: string, entry: FileEntry | undefined): void {
    const previous = this.#files.get(fileName);
    if (!entry) this.#later.delete(fileName);
    if (previous?.hash === entry?.hash) {
      if (entry) this.#files.set(fileName, entry);
      else this.#files.delete(fileName);
      return;
    }
    if (previous?.hash) {
      const before = this.#current.get(previous.hash) ?? [];
      const holders = before.filter((name) => name !== fileName);
      const known = this.#local.get(previous.hash);
      if (before[0] === fileName) this.#relist(fileName, undefined);
      if (holders.length) {
        this.#current.set(previous.hash, holders);
        if (before[0] === fileName) {
          // Another file holds the same text: the document now goes by its name.
          if (known)
            this.#local.set(previous.hash, {
              ...known,
              name: holders[0]!.slice(0, -3),
              file: join(this.#options.directory, holders[0]!),
            });
          this.#relist(holders[0]!, previous.hash);
        }
      } else {
        this.#current.delete(previous.hash);
        this.#retired.add(previous.hash);
      }
    }
    if (entry) this.#files.set(fileName, entry);
    else this.#files.delete(fileName);
    if (entry?.hash) {
      const holders = this.#current.get(entry.hash);
      if (holders) holders.push(fileName);
      else {
        this.#current.set(entry.hash, [fileName]);
        this.#relist(fileName, entry.hash);
      }
      this.#retired.delete(entry.hash);
    }
    this.#listing.changed();
    this.#version += 1;
  }

  #lookLater(fileName: string, delayMs: number, retryMs?: number): void {
    const at = this.#options.now() + Math.max(1, delayMs) + 20;
    this.#later.set(fileName, retryMs === undefined ? { at } : { at, retryMs });
    if (at < this.#timerAt) this.#arm();
  }

  #retryScan(): void {
    if (this.#closed) return;
    setTimeout(() => void this.scan(), RETRY_MS).unref?.();
  }

  /** One timer, at the earliest file to look at again. */
  #arm(): void {
    clearTimeout(this.#timer);
    this.#timerAt = Number.POSITIVE_INFINITY;
    if (this.#closed) return;
    let earliest = Number.POSITIVE_INFINITY;
    for (const { at } of this.#later.values()) earliest = Math.min(earliest, at);
    if (earliest === Number.POSITIVE_INFINITY) return;
    this.#timerAt = earliest;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#timerAt = Number.POSITIVE_INFINITY;
        const now = this.#options.now();
        const due = [...this.#later].filter(([, { at }]) => at <= now).map(([name]) => name);
        for (const name of due) this.#queued.add(name);
        void this.#work().then(() => this.#arm());
      },
      Math.max(1, earliest - this.#options.now()),
    );
    this.#timer.unref?.();
  }

  /** Forgets replaced or removed versions no conversation has used within the live window. */
  #dropRetired(now: number): void {
    for (const hash of this.#retired) {
      const known = this.#local.get(hash);
      if (known?.usedAt !== undefined && now - known.usedAt < this.#options.liveMs) continue;
      this.#local.delete(hash);
      this.#retired.delete(hash);
    }
  }
}
