// How long guest code may compute, measured in CPU time rather than wall-clock time: on a loaded machine (or a
// process descheduled for a while) wall time runs on while the guest does nothing, and a limit by `Date.now()`
// failed honest calls. The clock is read when a slice starts and ends (~1 µs each), and wherever QuickJS asks its
// interrupt handler (every few thousand operations, every few ms of a tight loop).
//
// The clock is `process.cpuUsage()` by default: the process's CPU time, all threads together. Other threads' work
// (the GC's helpers, the type-check worker) can only make the limit trip earlier, never later. A wall-clock backstop
// (the call's time limit) stops code that QuickJS polls rarely, such as one long built-in call.

/** Milliseconds of CPU time from some fixed origin; injectable for tests. */
export type CpuClock = () => number;

/** The process's CPU time, user and system, in ms. */
export const processCpuClock: CpuClock = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};

/** One stretch of guest code under a CPU budget and a wall-clock backstop. */
export type CpuSlice = {
  readonly cpuMs: number;
  readonly wallMs: number;
  readonly started: number;
  /** The CPU clock's reading when the slice started. */
  readonly cpuBase: number;
  /** Why the interrupt handler stopped the guest, once it has. */
  breach: 'cpu' | 'wall' | undefined;
};

/** A slice starting now, allowed `cpuMs` of CPU time (by `clock`) and `wallMs` of wall-clock time. */
export function beginSlice(cpuMs: number, wallMs: number, clock: CpuClock): CpuSlice {
  return { cpuMs: Math.max(1, cpuMs), wallMs: Math.max(1, wallMs), started: performance.now(), cpuBase: clock(), breach: undefined };
}

/**
 * The interrupt decision for a slice (undefined: no guest code should be running, so stop it): true once the CPU
 * budget or the wall-clock backstop is spent.
 */
export function shouldInterrupt(slice: CpuSlice | undefined, clock: CpuClock): boolean {
  if (!slice) return true;
  if (slice.breach) return true;
  if (performance.now() - slice.started >= slice.wallMs) {
    slice.breach = 'wall';
    return true;
  }
  if (clock() - slice.cpuBase >= slice.cpuMs) {
    slice.breach = 'cpu';
    return true;
  }
  return false;
}

/** The CPU time a finished slice is charged. */
export function chargedMs(slice: CpuSlice, clock: CpuClock): number {
  return clock() - slice.cpuBase;
}
