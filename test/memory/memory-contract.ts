import { describe, expect, it } from 'vitest';
import type { AgentMemory } from '../../src/memory/file.js';

/** Builds a fresh, empty memory (a unique key prefix or folder for shared backends). */
export type MemoryFactory = () => AgentMemory | Promise<AgentMemory>;

/** Runs the behaviour every {@link AgentMemory} must have against the memory the factory builds. */
export function describeMemoryContract(name: string, factory: MemoryFactory): void {
  describe(`${name} (AgentMemory contract)`, () => {
    it('stores JSON values under checked keys', async () => {
      const memory = await factory();
      expect(await memory.get('documents/abc')).toBeUndefined();
      const value = { text: 'PD', sources: ['https://example.org/pd.md'], verdict: null, count: 2 };
      await memory.set('documents/abc', value);
      expect(await memory.get('documents/abc')).toEqual(value);
      await memory.delete('documents/abc');
      expect(await memory.get('documents/abc')).toBeUndefined();
      await expect(memory.set('../escape', 1)).rejects.toThrow('Invalid memory key');
      await expect(memory.set('../escape', 1)).rejects.toMatchObject({ name: 'AgoraError', code: 'INVALID_ARGUMENT' });
      await memory.close();
    });

    it('refuses keys that are not paths of [A-Za-z0-9._-] segments', async () => {
      const memory = await factory();
      for (const key of ['', '/leading', 'trailing/', 'a//b', 'a/./b', 'a/../b', '..', 'spa ce', 'ü']) {
        await expect(memory.get(key), key).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      }
      await memory.close();
    });

    it('hands out copies, so mutating a value read or written changes nothing stored', async () => {
      const memory = await factory();
      const value = { list: [1, 2] };
      await memory.set('values/a', value);
      value.list.push(3);
      const read = await memory.get<{ list: number[] }>('values/a');
      read!.list.push(4);
      expect(await memory.get('values/a')).toEqual({ list: [1, 2] });
      await memory.close();
    });

    it('lists keys under a folder prefix, sorted', async () => {
      const memory = await factory();
      for (const key of ['documents/b', 'documents/a', 'documents/nested/c', 'verdicts/a', 'docs'])
        await memory.set(key, true);
      expect(await memory.keys('documents/')).toEqual(['documents/a', 'documents/b', 'documents/nested/c']);
      expect(await memory.keys('missing/')).toEqual([]);
      await memory.close();
    });

    it('increments atomically: 100 parallel increments make 100', async () => {
      const memory = await factory();
      const values = await Promise.all(Array.from({ length: 100 }, () => memory.increment('usage/calls')));
      expect(new Set(values).size).toBe(100);
      expect(await memory.get('usage/calls')).toBe(100);
      expect(await memory.increment('usage/calls', 5)).toBe(105);
      await memory.close();
    });

    it('counts a non-number as 0 and adds fractions', async () => {
      const memory = await factory();
      await memory.set('usage/text', 'not a number');
      expect(await memory.increment('usage/text')).toBe(1);
      expect(await memory.increment('usage/text', 0.5)).toBe(1.5);
      expect(await memory.increment('usage/text')).toBe(2.5);
      expect(await memory.get('usage/text')).toBe(2.5);
      await memory.close();
    });
  });
}
