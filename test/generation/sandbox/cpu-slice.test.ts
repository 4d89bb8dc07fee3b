import { afterEach, describe, expect, it, vi } from 'vitest';
import { beginSlice, chargedMs, cpuMeter, shouldInterrupt } from '../../../src/generation/sandbox/_cpu-slice.js';

// The wall clock is set by hand here; the CPU clock counts its readings and says what each test wants.
let wall = 1000;
afterEach(() => {
  vi.restoreAllMocks();
  wall = 1000;
});
function meterReading(cpu: () => number) {
  vi.spyOn(performance, 'now').mockImplementation(() => wall);
  let reads = 0;
  const meter = cpuMeter(() => {
    reads++;
    return cpu();
  });
  return { meter, reads: () => reads };
}

describe('CPU slices', () => {
  it('let slices that begin within a millisecond share one reading of the CPU clock', () => {
    const { meter, reads } = meterReading(() => 0);
    for (let index = 0; index < 10; index++) {
      const slice = beginSlice(250, 2000, meter);
      wall += 0.05;
      expect(chargedMs(slice, meter)).toBeCloseTo(0.05);
    }
    expect(reads()).toBe(1);
    wall += 1;
    beginSlice(250, 2000, meter);
    expect(reads()).toBe(2);
  });

  it('do not read the CPU clock while the wall clock says the budget cannot be spent', () => {
    const { meter, reads } = meterReading(() => 0);
    const slice = beginSlice(50, 2000, meter);
    wall += 49;
    expect(shouldInterrupt(slice, meter)).toBe(false);
    expect(reads()).toBe(1);
  });

  it('charge a long slice its CPU time, never more than its wall-clock time', () => {
    let cpu = 0;
    const { meter } = meterReading(() => cpu);
    const descheduled = beginSlice(50, 2000, meter);
    wall += 40;
    cpu += 3;
    expect(chargedMs(descheduled, meter)).toBe(3);
    const busy = beginSlice(50, 2000, meter);
    wall += 5;
    // Other threads made the process clock run faster than the wall clock: the guest is charged the wall time.
    cpu += 8;
    expect(chargedMs(busy, meter)).toBe(5);
  });

  it('stop a slice once its CPU time is spent, and at the wall-clock backstop whatever the CPU clock says', () => {
    let cpu = 0;
    const { meter } = meterReading(() => cpu);
    const spinning = beginSlice(50, 2000, meter);
    wall += 60;
    cpu += 30;
    expect(shouldInterrupt(spinning, meter)).toBe(false);
    cpu += 20;
    expect(shouldInterrupt(spinning, meter)).toBe(true);
    expect(spinning.breach).toBe('cpu');
    const stalled = beginSlice(50, 100, meter);
    wall += 100;
    expect(shouldInterrupt(stalled, meter)).toBe(true);
    expect(stalled.breach).toBe('wall');
    expect(shouldInterrupt(undefined, meter)).toBe(true);
  });
});
