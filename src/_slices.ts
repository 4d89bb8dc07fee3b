// Internal: long work cut into slices of a few ms, with a turn of the event loop between them, so requests are
// answered while a folder is scanned or a large answer is built.

/** How long a slice may hold the event loop, ms. */
export const SLICE_MS = 4;

/**
 * The clock of sliced work: `due` once the current slice has run its time, `next()` gives the event loop a turn and
 * starts the next slice.
 * @example const slices = new Slices(); for (const item of items) { work(item); if (slices.due) await slices.next(); }
 */
export class Slices {
  readonly #ms: number;
  #start = performance.now();

  constructor(ms = SLICE_MS) {
    this.#ms = ms;
  }

  /** Whether the current slice has run its time. */
  get due(): boolean {
    return performance.now() - this.#start >= this.#ms;
  }

  /** A turn of the event loop (I/O and timers run), then a new slice. */
  async next(): Promise<void> {
    await new Promise(setImmediate);
    this.#start = performance.now();
  }
}
