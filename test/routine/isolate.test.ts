import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isolateRoutinesFromEnv, SyncTimeLimit } from '../../src/routine/isolate.js';

describe('SyncTimeLimit', () => {
  it('fails an endless synchronous loop at its limit, and serves the next call', () => {
    const limit = new SyncTimeLimit();
    expect(() =>
      limit.run(() => {
        for (;;);
      }, 50),
    ).toThrow(/ran synchronously for longer than 50 ms/);
    expect(limit.run(() => 42, 50)).toBe(42);
  });

  it('keeps the main realm: zod schemas and instanceof work as written', () => {
    const limit = new SyncTimeLimit();
    const schema = z.object({ n: z.number() });
    const parsed = limit.run(() => schema.safeParse({ n: 'x' }), 1000);
    expect(parsed.success).toBe(false);
    expect(limit.run(() => [1, 2], 1000)).toBeInstanceOf(Array);
    expect(() =>
      limit.run(() => {
        throw new TypeError('bad');
      }, 1000),
    ).toThrow(TypeError);
  });

  it('returns a promise untouched (what follows an await is outside the limit)', async () => {
    const limit = new SyncTimeLimit();
    await expect(limit.run(async () => 'later', 1000)).resolves.toBe('later');
  });

  it('reads AGORA_ISOLATE_ROUTINES', () => {
    expect(isolateRoutinesFromEnv({ AGORA_ISOLATE_ROUTINES: '1' })).toBe(true);
    expect(isolateRoutinesFromEnv({ AGORA_ISOLATE_ROUTINES: 'true' })).toBe(true);
    expect(isolateRoutinesFromEnv({})).toBe(false);
  });
});
