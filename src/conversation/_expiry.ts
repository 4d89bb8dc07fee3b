// Internal: live conversations ordered by expiry, so that expiring them costs what expires, never what is live.

type Bucket = {
  /** Ids that expired at this instant when they were added; a turn since may have moved some (they are skipped). */
  ids: string[];
  /** How many of `ids` still expire at this instant. */
  pending: number;
  /** The first id of `ids` not looked at yet. */
  next: number;
};

/**
 * A time-ordered index of expiry instants (Unix ms, one bucket per instant): adding or moving an id is O(1) (a
 * sliding expiry only moves forward, so a new instant is almost always the last one), and {@link take} walks the
 * due ids from the oldest, a bounded number at a time. A moved id is not searched for: its old bucket's count drops
 * and the stale id is skipped when its bucket comes due.
 */
export class ExpiryIndex {
  readonly #buckets = new Map<number, Bucket>();
  /** Instants with a bucket, ascending from `#head` (earlier slots are spent). */
  #order: number[] = [];
  #head = 0;

  /** Adds an id expiring at `at`. */
  add(id: string, at: number): void {
    let bucket = this.#buckets.get(at);
    if (!bucket) {
      bucket = { ids: [], pending: 0, next: 0 };
      this.#buckets.set(at, bucket);
      this.#insert(at);
    }
    bucket.ids.push(id);
    bucket.pending += 1;
  }

  /** Forgets that an id expires at `at` (it was moved, ended or expired by a read). */
  remove(at: number): void {
    const bucket = this.#buckets.get(at);
    if (!bucket) return;
    bucket.pending -= 1;
    // Nobody expires at this instant any more: its stale ids go now; the bucket stays until due (its slot is in the
    // order).
    if (bucket.pending <= 0) {
      bucket.ids = [];
      bucket.next = 0;
    }
  }

  /** How many ids are due at `now` and not taken yet (walks the due instants only). */
  due(now: number): number {
    let due = 0;
    for (let index = this.#head; index < this.#order.length; index += 1) {
      const at = this.#order[index]!;
      if (at > now) break;
      due += this.#buckets.get(at)?.pending ?? 0;
    }
    return due;
  }

  /**
   * Hands at most `limit` due ids to `expire`, oldest first, with the instant they were due at; `expire` answers
   * whether the id still expired then (a stale id, moved by a turn, answers false). Returns how many ids were
   * looked at; fewer than `limit` means nothing due is left.
   */
  take(now: number, limit: number, expire: (id: string, at: number) => boolean): number {
    let seen = 0;
    while (seen < limit && this.#head < this.#order.length) {
      const at = this.#order[this.#head]!;
      if (at > now) break;
      const bucket = this.#buckets.get(at);
      if (bucket) {
        while (seen < limit && bucket.next < bucket.ids.length) {
          const id = bucket.ids[bucket.next]!;
          bucket.next += 1;
          seen += 1;
          if (expire(id, at)) bucket.pending -= 1;
        }
        if (bucket.next < bucket.ids.length) break;
        this.#buckets.delete(at);
      }
      this.#head += 1;
    }
    this.#compact();
    return seen;
  }

  /** Ids tracked, stale ones included (for tests and metrics). */
  get size(): number {
    let size = 0;
    for (const bucket of this.#buckets.values()) size += bucket.ids.length - bucket.next;
    return size;
  }

  #insert(at: number): void {
    const order = this.#order;
    if (this.#head === order.length || at > order[order.length - 1]!) {
      order.push(at);
      return;
    }
    // An instant earlier than the last (a conversation created with its own expiry): a binary search and a splice.
    let low = this.#head;
    let high = order.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (order[middle]! < at) low = middle + 1;
      else high = middle;
    }
    order.splice(low, 0, at);
  }

  #compact(): void {
    if (this.#head > 4096 && this.#head * 2 > this.#order.length) {
      this.#order = this.#order.slice(this.#head);
      this.#head = 0;
    }
  }
}
