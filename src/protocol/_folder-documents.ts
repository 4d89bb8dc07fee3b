// Internal: the documents of a protocol folder, by hash and by name: which file holds each, the sorted listing, and
// the replaced versions kept while conversations use them.
import { join } from 'node:path';
import type { ProtocolDocument } from './document.js';
import { SortedListing, type ListedDocument } from './_listing.js';

/** A document of the folder: current, or replaced and kept while a conversation uses it. */
export type LocalDocument = { document: ProtocolDocument; name: string; file: string; usedAt?: number };

/** The documents a folder's files hold, kept in step as each file's hash changes. */
export class FolderDocuments {
  readonly #directory: string;
  /** By hash: the documents in the folder, and replaced ones still in use. */
  readonly #local = new Map<string, LocalDocument>();
  /** hash → the file names holding it (almost always one), for the documents currently in the folder. */
  readonly #current = new Map<string, string[]>();
  /** The listing kept sorted by name (once first asked for). */
  readonly #listing = new SortedListing();
  /** Hashes that left the folder, kept in `#local` while conversations use them. */
  readonly #retired = new Set<string>();
  /** Bumped by every change of the listing. */
  #version = 0;

  constructor(directory: string) {
    this.#directory = directory;
  }

  /** A number that changes whenever the listing does (for answers built once per change). */
  get version(): number {
    return this.#version;
  }

  /** Whether a hash is a document currently in the folder. */
  isCurrent(hash: string): boolean {
    return this.#current.has(hash);
  }

  /** A document by hash: current, or (with `retired`) a replaced version still kept. */
  find(hash: string, retired = false): LocalDocument | undefined {
    return retired || this.#current.has(hash) ? this.#local.get(hash) : undefined;
  }

  /** The documents currently in the folder, with their names, by name (a listing handed out never moves). */
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

  /** A document read from a file: kept by its hash, unless the same text is in the folder under another name. */
  read(fileName: string, document: ProtocolDocument): void {
    if (!this.#current.has(document.hash))
      this.#local.set(document.hash, { document, name: fileName.slice(0, -3), file: join(this.#directory, fileName) });
  }

  /** A file's document changed from `previous` to `next` (undefined: none), moving it in or out of the listing. */
  move(fileName: string, previous: string | undefined, next: string | undefined): void {
    if (previous) {
      const before = this.#current.get(previous) ?? [];
      const holders = before.filter((name) => name !== fileName);
      const known = this.#local.get(previous);
      if (before[0] === fileName) this.#relist(fileName, undefined);
      if (holders.length) {
        this.#current.set(previous, holders);
        if (before[0] === fileName) {
          // Another file holds the same text: the document now goes by its name.
          if (known)
            this.#local.set(previous, {
              ...known,
              name: holders[0]!.slice(0, -3),
              file: join(this.#directory, holders[0]!),
            });
          this.#relist(holders[0]!, previous);
        }
      } else {
        this.#current.delete(previous);
        this.#retired.add(previous);
      }
    }
    if (next) {
      const holders = this.#current.get(next);
      if (holders) holders.push(fileName);
      else {
        this.#current.set(next, [fileName]);
        this.#relist(fileName, next);
      }
      this.#retired.delete(next);
    }
    this.#listing.changed();
    this.#version += 1;
  }

  /** Forgets replaced or removed versions no conversation has used within `liveMs`. */
  dropRetired(now: number, liveMs: number): void {
    for (const hash of this.#retired) {
      const known = this.#local.get(hash);
      if (known?.usedAt !== undefined && now - known.usedAt < liveMs) continue;
      this.#local.delete(hash);
      this.#retired.delete(hash);
    }
  }

  /** Keeps the sorted listing in step: `fileName` leaves it, or enters it with `hash`'s document. */
  #relist(fileName: string, hash: string | undefined): void {
    this.#listing.set(fileName.slice(0, -3), hash === undefined ? undefined : this.#local.get(hash)?.document);
  }
}
