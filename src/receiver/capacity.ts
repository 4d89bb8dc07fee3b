// Internal: the cap on live conversations, held under concurrency.

/**
 * Places for new conversations under a cap. A place is reserved before the first turn runs and released once the
 * conversation is stored (or the turn failed). Each reservation reads the store's count on its own (bounded by the
 * store's command timeout: a stalled store fails each one in that time, none waits behind another), then takes its
 * place synchronously, so concurrent queries can never together pass the cap: a place released while a count was
 * in flight still counts against that reservation (its conversation may be missing from the count it read).
 */
export class ConversationCapacity {
  readonly #max: number;
  readonly #count: () => Promise<number>;
  /** Places taken by first turns still running. */
  #pending = 0;
  /** Places given back so far (a reservation counts those given back while it read the store). */
  #released = 0;

  constructor(max: number, count: () => Promise<number>) {
    this.#max = max;
    this.#count = count;
  }

  /**
   * Takes a place, or resolves false when the cap is reached; rejects with the store's error. A taken place must be
   * given back with the returned function once the conversation is stored or failed (from then on the store counts it).
   */
  async reserve(): Promise<(() => void) | false> {
    const releasedBefore = this.#released;
    const live = await this.#count();
    if (live + this.#pending + (this.#released - releasedBefore) >= this.#max) return false;
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
