// The time limits of routine runs, on shared timers: one set per receiver, passed to each run (tests make their own).

/**
 * Deadlines sharing timers, 25 ms apart: one setTimeout per query costs more than the routine itself in profiles,
 * and a time limit of seconds does not need millisecond precision. On the monotonic clock (`performance.now()`), from
 * the start the caller read already (for the routine's latency): a clock read costs about 90 ns, a tenth of a small
 * routine.
 */
export class RoutineDeadlines {
  static readonly STEP_MS = 25;
  readonly #due = new Map<number, Set<() => void>>();
  // The set the last deadline went into: under load most queries share it, and skip the Map lookup.
  #lastDue = -1;
  #lastSet: Set<() => void> | undefined;

  /** Calls `fire` once `delayMs` have passed since `startedMs` (rounded up to the step); returns how to cancel. */
  add(startedMs: number, delayMs: number, fire: () => void): () => void {
    const step = RoutineDeadlines.STEP_MS;
    const due = Math.ceil((startedMs + delayMs) / step) * step;
    let set = due === this.#lastDue ? this.#lastSet : this.#due.get(due);
    if (set === undefined) {
      const created = new Set<() => void>();
      set = created;
      this.#due.set(due, created);
      setTimeout(() => {
        this.#due.delete(due);
        if (this.#lastSet === created) this.#lastSet = undefined;
        for (const callback of created) callback();
      }, due - performance.now()).unref();
    }
    this.#lastDue = due;
    this.#lastSet = set;
    const dueSet = set;
    dueSet.add(fire);
    return () => void dueSet.delete(fire);
  }

  /** Deadlines waiting (for tests and metrics). */
  get pending(): number {
    let count = 0;
    for (const set of this.#due.values()) count += set.size;
    return count;
  }
}
