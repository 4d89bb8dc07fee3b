import { describe, expect, it } from 'vitest';
import { Revisits } from '../../src/protocol/_revisits.js';

describe('files waiting to be looked at again', () => {
  it('hold the first load until a look after the bound, however late the clock runs', () => {
    let now = 1_000;
    const later = new Revisits(
      () => now,
      async () => {},
    );
    later.schedule('busy.md', 20);
    // The clock passes the bound while the file waits: its last look was before it, so it still holds the load
    // (a loaded machine can reach the check long after the look that found the file still being written).
    now += 500;
    expect(later.allWaitedLonger(200)).toBe(false);
    // Looked at again past the bound (and still torn): now the load may end without it.
    later.schedule('busy.md', 20);
    expect(later.allWaitedLonger(200)).toBe(true);
    later.close();
  });

  it('hold it while a read failed for want of resources, whatever the wait', () => {
    let now = 0;
    const later = new Revisits(
      () => now,
      async () => {},
    );
    later.schedule('full.md', 100, 100);
    now += 10_000;
    later.schedule('full.md', 200, 200);
    expect(later.allWaitedLonger(200)).toBe(false);
    later.delete('full.md');
    expect(later.allWaitedLonger(200)).toBe(true);
    later.close();
  });
});
