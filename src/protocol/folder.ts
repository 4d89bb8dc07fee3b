import type { Stats } from 'node:fs';
import { readdirSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import { parseDocument, type ProtocolDocument } from './document.js';
import { statAndRead, statAndReadSync, type FileRead } from './_read.js';

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

/**
 * The `protocols/*.md` of an agent: a file is registered once it has settled (writers pause mid-file), and a
 * changed or removed one leaves the current set at once, its old text kept only while conversations use it.
 */
export class ProtocolFolder {
  readonly #options: ProtocolFolderOptions;
  /** By hash: the documents in the folder, and replaced ones still in use. */
  readonly #local = new Map<string, LocalDocument>();
  /** file name → what was last read from it. */
  readonly #files = new Map<string, FileEntry>();
  /** hash → name, for the documents currently in the folder. */
  #current = new Map<string, string>();
  #scanning: Promise<void> | undefined;
  #rescan = false;
  #settleTimer: NodeJS.Timeout | undefined;
  #closed = false;
  readonly #listeners = new Set<() => void>();
  #signature = '';

  constructor(options: ProtocolFolderOptions) {
    this.#options = options;
  }

  /** Whether a hash is a document currently in the folder. */
  isCurrent(hash: string): boolean {
    return this.#current.has(hash);
  }

  /** A document by hash: current, or (with `retired`) a replaced version still kept. */
  find(hash: string, retired = false): LocalDocument | undefined {
    return retired || this.#current.has(hash) ? this.#local.get(hash) : undefined;
  }

  /** The documents currently in the folder, with their names, by name. */
  list(): { name: string; document: ProtocolDocument }[] {
    const result: { name: string; document: ProtocolDocument }[] = [];
    for (const [hash, name] of this.#current) {
      const known = this.#local.get(hash);
      if (known) result.push({ name, document: known.document });
    }
    return result.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Re-reads the folder; the first (`initial`) scan takes files as they are. Concurrent calls coalesce. */
  scan(initial = false): Promise<void> {
    return this.#scan(initial);
  }

  /** Calls `listener` after a scan that changed which documents are in the folder; returns how to stop. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Stops the settle timer. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#settleTimer);
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
      this.#notify();
    })().finally(() => {
      this.#scanning = undefined;
    });
    return this.#scanning;
  }

  // Listeners hear of a change of the listing (a document added, removed or replaced), not of every scan.
  #notify(): void {
    const signature = [...this.#current.keys()].sort().join(',');
    if (signature === this.#signature) return;
    this.#signature = signature;
    for (const listener of this.#listeners) listener();
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
    const { directory, logger, settleMs } = this.#options;
    let names: string[];
    try {
      names = (synchronous ? readdirSync(directory) : await readdir(directory)).filter((name) => name.endsWith('.md') && !name.startsWith('.')).sort();
    } catch {
      names = [];
    }
    const now = this.#options.now();
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
      if (!synchronous && age < settleMs) {
        waitFor(settleMs - age);
        return false;
      }
      return true;
    };
    const take = (fileName: string, file: string, read: FileRead) => {
      if (read.changed) return waitFor(settleMs);
      const previous = this.#files.get(fileName);
      const entry: FileEntry = { mtimeMs: read.info.mtimeMs, size: read.info.size };
      this.#files.set(fileName, entry);
      try {
        const document = parseDocument(read.raw, file);
        entry.hash = document.hash;
        const name = fileName.slice(0, -3);
        current.set(document.hash, name);
        this.#local.set(document.hash, { document, name, file });
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
      if (known.usedAt === undefined || now - known.usedAt >= this.#options.liveMs) this.#local.delete(hash);
    }
  }
}
