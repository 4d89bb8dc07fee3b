// Two processes sharing a memory (workers on Redis) reach a protocol's routine threshold together: only one of them
// writes the routine (an LLM's work, paid once).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RoutineBook } from '../../../src/generation/lifecycle/book.js';
import { protocolPrefix } from '../../../src/generation/lifecycle/records.js';
import { silentLogger } from '../../../src/log.js';
import { InMemoryMemory } from '../../../src/memory/file.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the writer of a routine among processes sharing a memory', () => {
  it('is one of them: the first to claim it once the threshold is reached', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'agora-claim-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const memory = new InMemoryMemory();
    const books = [0, 1].map(() => new RoutineBook({ dir, memory, logger: silentLogger, threshold: 2 }));
    for (const book of books) cleanups.push(() => book.close());
    const prefix = protocolPrefix('a'.repeat(40));
    expect(await books[0]!.due(prefix)).toBe(false);
    // The threshold is reached in one process, then counted past it in the other: the first claim wins.
    expect(await books[1]!.due(prefix)).toBe(true);
    expect(await books[0]!.due(prefix)).toBe(false);
    expect(await books[1]!.due(prefix)).toBe(false);
  });
});
