// Internal: "one at a time per key", the one implementation every layer uses (memory read-modify-writes,
// conversation turns, routine bookkeeping, task state, folder reloads).

/**
 * Runs work one at a time per key, in the order it was queued; different keys run concurrently. A failed job
 * does not stop the next one. A key holds no memory once its queue drains.
 */
export class KeyedQueue<K = string> {
  readonly #tails = new Map<K, Promise<unknown>>();

  /** Queues `work` behind whatever is queued for `key`, and resolves or rejects as `work` does. */
  run<T>(key: K, work: () => T | Promise<T>): Promise<T> {
    const previous = this.#tails.get(key);
    const result = previous ? previous.then(work, work) : Promise.resolve().then(work);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }

  /** Whether anything is queued or running for `key`. */
  busy(key: K): boolean {
    return this.#tails.has(key);
  }

  /** How many keys have work queued or running. */
  get size(): number {
    return this.#tails.size;
  }
}
