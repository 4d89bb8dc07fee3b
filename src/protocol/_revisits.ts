// Internal: the files of a protocol folder to look at again (still being written, or failed for want of resources),
// on one timer set at the earliest.

/**
 * When to look at a file again, its retry delay after a failed read, since when it has been waiting, and when it was
 * last looked at (scheduled again).
 */
export type Revisit = { at: number; retryMs?: number; since: number; last: number };

/** File names to look at again, each at its time, on one timer; `onDue` is handed the names whose time came. */
export class Revisits {
  readonly #now: () => number;
  readonly #onDue: (names: string[]) => Promise<void>;
  readonly #later = new Map<string, Revisit>();
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #closed = false;

  constructor(now: () => number, onDue: (names: string[]) => Promise<void>) {
    this.#now = now;
    this.#onDue = onDue;
  }

  /** Files waiting to be looked at again. */
  get size(): number {
    return this.#later.size;
  }

  get(name: string): Revisit | undefined {
    return this.#later.get(name);
  }

  /**
   * Whether every file waiting was last looked at `ms` or more after it began waiting, failed reads aside (those
   * always hold). It is the last look that counts, not the clock now: a file looked at just before its bound still
   * gets the look after it (which takes its read as it is) before the wait can end.
   */
  allWaitedLonger(ms: number): boolean {
    for (const { retryMs, since, last } of this.#later.values())
      if (retryMs !== undefined || last - since < ms) return false;
    return true;
  }

  /** `name` need not be looked at again. */
  delete(name: string): void {
    this.#later.delete(name);
  }

  /** Looks at `name` again in `delayMs` (and 20 ms); `retryMs` after a failed read. Keeps when it began waiting. */
  schedule(name: string, delayMs: number, retryMs?: number): void {
    const now = this.#now();
    const at = now + Math.max(1, delayMs) + 20;
    const since = this.#later.get(name)?.since ?? now;
    this.#later.set(name, retryMs === undefined ? { at, since, last: now } : { at, retryMs, since, last: now });
    if (at < this.#timerAt) this.#arm();
  }

  /** Stops the timer. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
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
        const now = this.#now();
        const due = [...this.#later].filter(([, { at }]) => at <= now).map(([name]) => name);
        void this.#onDue(due).then(() => this.#arm());
      },
      Math.max(1, earliest - this.#now()),
    );
    this.#timer.unref?.();
  }
}
