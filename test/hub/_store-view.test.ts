import { describe, expect, it } from 'vitest';
import { StoreView } from '../../src/hub/_store-view.js';

/** A store whose version is a counter, and a view that counts its reloads. */
function setup() {
  const store = { current: 0, version: async () => store.current };
  const view = { reloads: 0 };
  const storeView = new StoreView(store, async () => {
    view.reloads++;
  });
  return { store, view, storeView };
}

describe('StoreView', () => {
  it('reloads on the first refresh, then only when the version moved', async () => {
    const { store, view, storeView } = setup();
    await storeView.refresh();
    await storeView.refresh();
    expect(view.reloads).toBe(1);
    store.current = 3;
    await storeView.refresh();
    expect(view.reloads).toBe(2);
  });

  it('takes its own write without a reload when it was the only write', async () => {
    const { store, view, storeView } = setup();
    await storeView.refresh();
    const result = await storeView.write(
      async () => ((store.current += 1), 'added'),
      (put) => put === 'added',
    );
    expect(result).toBe('added');
    await storeView.refresh();
    expect(view.reloads).toBe(1);
  });

  it('reloads at the next refresh when another process wrote during its write, or the write changed nothing', async () => {
    const { store, view, storeView } = setup();
    await storeView.refresh();
    await storeView.write(
      async () => ((store.current += 2), true),
      (stored) => stored,
    );
    await storeView.refresh();
    expect(view.reloads).toBe(2);
    await storeView.write(
      async () => false,
      (stored) => stored,
    );
    store.current += 1;
    await storeView.refresh();
    expect(view.reloads).toBe(3);
  });

  it('applies what changed when it can say, reloads when it cannot or the store went back, and never overlaps refreshes', async () => {
    const store = { current: 0, version: async () => store.current };
    const calls: string[] = [];
    let remembers = true;
    let inFlight = 0;
    const storeView = new StoreView(
      store,
      async () => void calls.push('reload'),
      async (since) => {
        inFlight += 1;
        expect(inFlight).toBe(1);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight -= 1;
        calls.push(`apply ${since}`);
        return remembers ? store.current : undefined;
      },
    );
    await storeView.refresh();
    store.current = 2;
    await Promise.all([storeView.refresh(), storeView.refresh(), storeView.refresh()]);
    expect(calls).toEqual(['reload', 'apply 0']);
    store.current = 3;
    remembers = false;
    await storeView.refresh();
    expect(calls).toEqual(['reload', 'apply 0', 'apply 2', 'reload']);
    store.current = 1;
    await storeView.refresh();
    expect(calls.at(-1)).toBe('reload');
  });
});
