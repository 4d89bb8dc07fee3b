import { describe, expect, it, vi } from 'vitest';
import { ConversationCapacity } from '../../src/receiver/capacity.js';

/** A count the test answers by hand, one pending read at a time. */
function manualCount() {
  const reads: ((value: number | Error) => void)[] = [];
  const count = () =>
    new Promise<number>((resolve, reject) =>
      reads.push((value) => (value instanceof Error ? reject(value) : resolve(value))),
    );
  return { count, reads };
}

describe('ConversationCapacity', () => {
  it('does not make a reservation wait behind another one whose store read is stalled', async () => {
    const { count, reads } = manualCount();
    const capacity = new ConversationCapacity(10, { count });
    const stalled = capacity.reserve();
    const next = capacity.reserve();
    // Both reads went to the store at once: the second does not queue behind the first.
    await vi.waitFor(() => expect(reads).toHaveLength(2));
    reads[1]!(new Error('Store unavailable'));
    await expect(next).rejects.toThrow('Store unavailable');
    reads[0]!(0);
    expect(typeof (await stalled)).toBe('function');
  });

  it('never lets concurrent reservations pass the cap, a place released during a read counted against it', async () => {
    const { count, reads } = manualCount();
    const capacity = new ConversationCapacity(2, { count });
    const first = capacity.reserve();
    await vi.waitFor(() => expect(reads).toHaveLength(1));
    reads[0]!(0);
    const release = await first;
    expect(release).toBeTypeOf('function');
    const a = capacity.reserve();
    const b = capacity.reserve();
    await vi.waitFor(() => expect(reads).toHaveLength(3));
    // The first conversation is stored (the store counts it from now on) while both reads are in flight.
    (release as () => void)();
    reads[1]!(0);
    reads[2]!(0);
    const results = await Promise.all([a, b]);
    // Both read 0, but the released place still counts against them: one takes the second place, not both.
    expect(results.filter((result) => result !== false)).toHaveLength(1);
    // Now the store counts the first conversation and the other is being filled: the cap (2) is reached.
    const c = capacity.reserve();
    await vi.waitFor(() => expect(reads).toHaveLength(4));
    reads[3]!(1);
    expect(await c).toBe(false);
  });
});
