import { describe, expect, it } from 'vitest';
import { KeyedQueue } from '../src/_queue.js';

/** A promise the test settles by hand. */
function gate<T = void>() {
  let open!: (value: T) => void;
  let fail!: (error: unknown) => void;
  const promise = new Promise<T>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('KeyedQueue', () => {
  it('runs the jobs of one key one at a time, in the order they were queued', async () => {
    const queue = new KeyedQueue();
    const events: string[] = [];
    const gates = [gate(), gate(), gate()];
    const runs = gates.map((job, index) =>
      queue.run('a', async () => {
        events.push(`start ${index}`);
        await job.promise;
        events.push(`end ${index}`);
        return index;
      }),
    );
    await settle();
    expect(events).toEqual(['start 0']);
    gates[2]!.open();
    gates[1]!.open();
    await settle();
    expect(events).toEqual(['start 0']);
    gates[0]!.open();
    expect(await Promise.all(runs)).toEqual([0, 1, 2]);
    expect(events).toEqual(['start 0', 'end 0', 'start 1', 'end 1', 'start 2', 'end 2']);
  });

  it('runs jobs of different keys concurrently', async () => {
    const queue = new KeyedQueue();
    const blocked = gate();
    const first = queue.run('a', () => blocked.promise.then(() => 'a'));
    expect(await queue.run('b', () => 'b')).toBe('b');
    await settle();
    expect(queue.busy('a')).toBe(true);
    expect(queue.busy('b')).toBe(false);
    blocked.open();
    expect(await first).toBe('a');
  });

  it('passes a failure to its caller and still runs the next job', async () => {
    const queue = new KeyedQueue();
    const failing = queue.run('a', async () => {
      throw new Error('boom');
    });
    const syncFailing = queue.run('a', () => {
      throw new Error('sync boom');
    });
    const next = queue.run('a', () => 'next');
    await expect(failing).rejects.toThrow('boom');
    await expect(syncFailing).rejects.toThrow('sync boom');
    expect(await next).toBe('next');
  });

  it('holds nothing for a key once its queue drains', async () => {
    const queue = new KeyedQueue<number>();
    const blocked = gate();
    const runs = [queue.run(1, () => blocked.promise), queue.run(1, () => undefined), queue.run(2, () => undefined)];
    expect(queue.size).toBe(2);
    expect(queue.busy(1)).toBe(true);
    blocked.open();
    await Promise.all(runs);
    await settle();
    expect(queue.size).toBe(0);
    expect(queue.busy(1)).toBe(false);
    expect(queue.busy(2)).toBe(false);
  });

  it('does not run a job before the current call stack ends', async () => {
    const queue = new KeyedQueue();
    let ran = false;
    const run = queue.run('a', () => {
      ran = true;
    });
    expect(ran).toBe(false);
    await run;
    expect(ran).toBe(true);
  });
});
