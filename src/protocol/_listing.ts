// Internal: the listing of a protocol folder by name, kept sorted by each change rather than sorted again.
import type { ProtocolDocument } from './document.js';

/** One document of the listing, under its file's name without `.md`. */
export type ListedDocument = { name: string; document: ProtocolDocument };

/**
 * The documents of a folder by name: sorted once when first asked for, then kept sorted by each change (a binary
 * search and a splice). Each change hands out a new array, so a listing already handed out never moves.
 */
export class SortedListing {
  #sorted: ListedDocument[] | undefined;
  #copy: ListedDocument[] | undefined;

  /** The listing; `build` gives its entries, in any order, when it is first asked for. */
  get(build: () => ListedDocument[]): readonly ListedDocument[] {
    this.#sorted ??= build().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.#copy ??= this.#sorted.slice();
    return this.#copy;
  }

  /** `name` leaves the listing (`document` undefined), or enters it or changes its document. */
  set(name: string, document: ProtocolDocument | undefined): void {
    const sorted = this.#sorted;
    if (!sorted) return;
    const at = this.#position(sorted, name);
    const present = sorted[at]?.name === name;
    if (present && document) sorted[at] = { name, document };
    else if (present) sorted.splice(at, 1);
    else if (document) sorted.splice(at, 0, { name, document });
  }

  /** The next {@link get} hands out a new array. */
  changed(): void {
    this.#copy = undefined;
  }

  /** Where `name` is, or would be, in the sorted listing. */
  #position(sorted: readonly ListedDocument[], name: string): number {
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (sorted[middle]!.name < name) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}
