// Internal: the cap on live conversations, held under concurrency.

/**
 * Places for new conversations under a cap. A place is reserved before the first turn runs and released once the
 * conversation is stored (or the turn failed), so concurrent queries can never together pass the cap: the store's
 * count and the places still being filled are read and taken in one step, one query at a time.
 */
export class ConversationCapacity {
  readonly #max: number;
  readonly #count: () => Promise<number>;
  /** Places taken by first turns still running. */
  #pending = 0;
  /** The tail of the check chain: one count-and-take at a time. */
  #tail: Promise<unknown> = Promise.resolve();

  constructor(max: number, count: () => Promise<number>) {
    this.#max = max;
    this.#count = count;
  }

  /**
   * Takes a place, or resolves false when the cap is reached. A taken place must be given back with the returned
   * function once the conversation is stored or failed (from then on the store counts it).
   */
  reserve(): Promise<(() => void) | false> {
    const result = this.#tail.then(async () => {
      const live = await this.#count();
      if (live + this.#pending >= this.#max) return false as const;
      this.#pending += 1;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        this.#pending -= 1;
      };
    });
    this.#tail = result.catch(() => undefined);
    return result;
  }
}
