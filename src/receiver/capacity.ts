// Internal: the cap on live conversations, held under concurrency.

/** What the cap reads: the store's live count, at once when the store keeps it as a counter. */
export type LiveCount = { count(): Promise<number>; countNow?(): number };

/**
 * Places for new conversations under a cap. A place is reserved before the first turn runs and released once the
 * conversation is stored (or the turn failed). With a store that keeps its live count as a counter (the memory store),
 * a reservation is one comparison, made synchronously, so concurrent queries can never together pass the cap.
 * Otherwise (Redis: a ZCOUNT, O(log n)) each reservation reads the count on its own (bounded by the store's command
 * timeout), then takes its place synchronously: a place released while a count was in flight still counts against
 * that reservation (its conversation may be missing from the count it read).
 */
export class ConversationCapacity {
  readonly #max: number;
  readonly #store: LiveCount;
  /** Places taken by first turns still running. */
  #pending = 0;
  /** Places given back so far (a reservation counts those given back while it read the store). */
  #released = 0;

  constructor(max: number, store: LiveCount) {
    this.#max = max;
    this.#store = store;
  }

  /**
   * Takes a place, or resolves false when the cap is reached; rejects with the store's error. A taken place must be
   * given back with the returned function once the conversation is stored or failed (from then on the store counts it).
   */
  reserve(): Promise<(() => void) | false> | (() => void) | false {
    if (this.#store.countNow) return this.#take(this.#store.countNow(), 0);
    const releasedBefore = this.#released;
    return this.#store.count().then((live) => this.#take(live, this.#released - releasedBefore));
  }

  #take(live: number, releasedMeanwhile: number): (() => void) | false {
    if (live + this.#pending + releasedMeanwhile >= this.#max) return false;
    this.#pending += 1;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#pending -= 1;
      this.#released += 1;
    };
  }
}
