// When the QuickJS sandbox (./quickjs.ts) starts the calls asked of it: together, once the turn of the event loop
// in which they were asked has run (at its setImmediate), rather than one by one as each request is read. A busy
// agent reads many requests in one turn; started at once, each guest call ran between two requests' HTTP work, with
// the interpreter's code and heap out of the CPU caches (a loop of calls with 4 MB of other memory touched between
// them cost about twice as much per call). Started together, the calls of a turn run back to back, and each caller
// hears of its call's end as soon as it ends. Measured through the agent, alternating with the earlier design (which
// ran calls at once and handed their results back together): 12-14% more requests a second in three runs of four, no
// difference in the fourth. A quiet agent's call waits at most until the end of the turn it was asked in.

/** A promise per turn of the event loop, resolved at its setImmediate: what the calls of one turn wait for together. */
export class TurnGate {
  #open: Promise<void> | undefined;

  /** Resolves once the current turn of the event loop has run. */
  next(): Promise<void> {
    return (this.#open ??= new Promise<void>((resolve) =>
      setImmediate(() => {
        this.#open = undefined;
        resolve();
      }),
    ));
  }
}
