// How long guest code may compute, measured in CPU time rather than wall-clock time: on a loaded machine (or a
// process descheduled for a while) wall time runs on while the guest does nothing, and a limit by `Date.now()`
// failed honest calls.
//
// The clock is `process.cpuUsage()` by default: the process's CPU time, all threads together. Other threads' work
// (the GC's helpers, the type-check worker) can only make the limit trip earlier, never later. A wall-clock backstop
// (the call's time limit) stops code that QuickJS polls rarely, such as one long built-in call.
//
// Reading that clock is a system call, several µs on a busy server, and most slices last well under a millisecond:
// reading it when every slice starts and ends cost more than some routines. So a slice reads it only when it must.
// The guest's own CPU time never exceeds the wall-clock time since its slice began, and never exceeds the
// process's CPU time since any reading taken before the slice began: both are upper bounds, so the smaller is one
// too. While the wall-clock time is under the budget, nothing needs reading; past it, the CPU clock decides, from a
// reading at most MARK_MS old when the slice began (the few host µs before the slice are charged to the guest).

/** Milliseconds of CPU time from some fixed origin; injectable for tests. */
export type CpuClock = () => number;

/** The process's CPU time, user and system, in ms. */
export const processCpuClock: CpuClock = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
};

// How old a clock reading may be when a slice takes it as its base (and so the most a slice is over-charged).
const MARK_MS = 1;

/** A CPU clock and its last reading (`cpu`, taken at `performance.now()` `wall`), shared by one instance's slices. */
export type CpuMeter = { readonly clock: CpuClock; wall: number; cpu: number };

/** A meter for `clock`, not yet read. */
export function cpuMeter(clock: CpuClock): CpuMeter {
  return { clock, wall: -Infinity, cpu: 0 };
}

/** One stretch of guest code under a CPU budget and a wall-clock backstop. */
export type CpuSlice = {
  readonly cpuMs: number;
  readonly wallMs: number;
  readonly started: number;
  /** A reading of the CPU clock taken before the slice started. */
  readonly cpuBase: number;
  /** Why the interrupt handler stopped the guest, once it has. */
  breach: 'cpu' | 'wall' | undefined;
};

/** A slice starting now, allowed `cpuMs` of CPU time (by the meter's clock) and `wallMs` of wall-clock time. */
export function beginSlice(cpuMs: number, wallMs: number, meter: CpuMeter): CpuSlice {
  const started = performance.now();
  if (started - meter.wall >= MARK_MS) {
    meter.cpu = meter.clock();
    meter.wall = started;
  }
  return { cpuMs: Math.max(1, cpuMs), wallMs: Math.max(1, wallMs), started, cpuBase: meter.cpu, breach: undefined };
}

/**
 * The interrupt decision for a slice (undefined: no guest code should be running, so stop it): true once the CPU
 * budget or the wall-clock backstop is spent.
 */
export function shouldInterrupt(slice: CpuSlice | undefined, meter: CpuMeter): boolean {
  if (!slice) return true;
  if (slice.breach) return true;
  const wall = performance.now() - slice.started;
  if (wall >= slice.wallMs) {
    slice.breach = 'wall';
    return true;
  }
  // Under the budget by the wall clock is under it by the CPU clock: no reading needed.
  if (wall < slice.cpuMs) return false;
  if (meter.clock() - slice.cpuBase >= slice.cpuMs) {
    slice.breach = 'cpu';
    return true;
  }
  return false;
}

/** The CPU time a finished slice is charged: the smaller of its two bounds, the clock read only for a long slice. */
export function chargedMs(slice: CpuSlice, meter: CpuMeter): number {
  const wall = performance.now() - slice.started;
  return wall < MARK_MS ? wall : Math.min(wall, meter.clock() - slice.cpuBase);
}
