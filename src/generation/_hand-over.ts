// How the QuickJS sandbox (./quickjs.ts) hands finished calls to their callers: in a batch, from setImmediate, so
// the queued calls that need no I/O run back to back first. Interleaved with what the callers do next (an agent
// writes its HTTP reply), each call began with the interpreter's code and heap out of the CPU caches: a loop of
// calls with 4 MB of other memory touched between them cost about twice as much per call. A caller waits at most
// until the event loop's check phase.

/** Callbacks run together at the next setImmediate. */
export class HandOvers {
  #pending: (() => void)[] = [];

  /** Runs `settle` with the others at the next setImmediate. */
  add(settle: () => void): void {
    this.#pending.push(settle);
    if (this.#pending.length > 1) return;
    setImmediate(() => {
      const settles = this.#pending;
      this.#pending = [];
      for (const each of settles) each();
    });
  }
}
