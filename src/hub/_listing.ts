// Internal: ids kept in the order a listing shows them (by name, then id), so a listing page costs its size and a
// change to one record is one binary insertion, never a sort of the whole directory.

const collator = new Intl.Collator('en');

/** A page of a listing: the ids on it, and how many the whole listing holds. */
export type ListingPage = { ids: string[]; total: number };

/** Ids in order of a text key (a name), then id. */
export class SortedListing {
  #keys: string[] = [];
  #ids: string[] = [];
  readonly #keyOf = new Map<string, string>();

  /** Ids held. */
  get size(): number {
    return this.#ids.length;
  }

  #compare(keyA: string, idA: string, keyB: string, idB: string): number {
    return collator.compare(keyA, keyB) || (idA < idB ? -1 : idA > idB ? 1 : 0);
  }

  /** Where (key, id) goes, or is. */
  #position(key: string, id: string): number {
    let low = 0;
    let high = this.#ids.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.#compare(this.#keys[middle]!, this.#ids[middle]!, key, id) < 0) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** Places an id under its key (moving it when its key changed). */
  set(id: string, key: string): void {
    if (this.#keyOf.get(id) === key) return;
    this.delete(id);
    const at = this.#position(key, id);
    this.#keys.splice(at, 0, key);
    this.#ids.splice(at, 0, id);
    this.#keyOf.set(id, key);
  }

  /** Removes an id. */
  delete(id: string): void {
    const key = this.#keyOf.get(id);
    if (key === undefined) return;
    this.#keyOf.delete(id);
    const at = this.#position(key, id);
    if (this.#ids[at] === id) {
      this.#keys.splice(at, 1);
      this.#ids.splice(at, 1);
    }
  }

  /** Replaces everything with these (id, key) pairs, sorted once. */
  load(entries: Iterable<readonly [string, string]>): void {
    this.#keyOf.clear();
    for (const [id, key] of entries) this.#keyOf.set(id, key);
    const sorted = [...this.#keyOf].sort(([idA, keyA], [idB, keyB]) => this.#compare(keyA, idA, keyB, idB));
    this.#ids = sorted.map(([id]) => id);
    this.#keys = sorted.map(([, key]) => key);
  }

  /**
   * The ids from `offset`, at most `limit`, of those `accept` takes (all without it), with their total. Without a
   * filter this costs the page; with one, a walk of the ids (counting what a filter takes needs it).
   */
  page(offset: number, limit: number, accept?: (id: string) => boolean): ListingPage {
    if (accept === undefined) return { ids: this.#ids.slice(offset, offset + limit), total: this.#ids.length };
    const ids: string[] = [];
    let total = 0;
    for (const id of this.#ids) {
      if (!accept(id)) continue;
      if (total >= offset && ids.length < limit) ids.push(id);
      total += 1;
    }
    return { ids, total };
  }
}
