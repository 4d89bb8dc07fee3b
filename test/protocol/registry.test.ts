import { mkdtemp, mkdir, rm, unlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../../src/log.js';
import { InMemoryMemory } from '../../src/memory/file.js';
import { encodeDataUri } from '../../src/protocol/data-uri.js';
import { hashText } from '../../src/protocol/document.js';
import { ProtocolRegistry, type RegistryOptions } from '../../src/protocol/registry.js';

const doc = (name: string, extra = '') =>
  `---\nname: ${name}\ndescription: ${name} things\nmultiround: false\n---\nSend JSON.${extra}\n`;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function setup(files: Record<string, string> = {}, options: Partial<RegistryOptions> = {}) {
  const root = await mkdtemp(join(tmpdir(), 'agora-registry-'));
  const directory = join(root, 'protocols');
  await mkdir(directory);
  for (const [name, text] of Object.entries(files)) await writeFile(join(directory, name), text);
  const memory = new InMemoryMemory();
  const logger = memoryLogger();
  const registry = new ProtocolRegistry({ directory, memory, logger, watch: false, ...options });
  cleanups.push(async () => {
    registry.close();
    await rm(root, { recursive: true, force: true });
  });
  return { directory, memory, logger, registry };
}

describe('ProtocolRegistry', () => {
  it("loads the folder's documents by name and hash, and skips invalid ones with a warning", async () => {
    const { registry, logger } = await setup({
      'weather.md': doc('Weather'),
      'bad.md': '---\nname: x\n---\n',
      'notes.txt': 'ignored',
    });
    await registry.start();
    expect(registry.local().map((entry) => entry.name)).toEqual(['weather']);
    expect(registry.get(hashText(doc('Weather')))).toMatchObject({ origin: 'local', name: 'weather' });
    expect(logger.lines.some((line) => line.startsWith('warn protocol') && line.includes('bad.md skipped'))).toBe(true);
  });

  it('sees added, changed and removed files at the next scan once settled; a replaced version answers only conversations under way', async () => {
    // Files were last written 10 s ago by this clock: settled.
    let now = Date.now() + 10_000;
    const { registry, directory } = await setup({ 'a.md': doc('A') }, { now: () => now, learned: { liveMs: 60_000 } });
    await registry.start();
    const oldHash = hashText(doc('A'));
    expect(await registry.resolve(oldHash, [])).toMatchObject({ origin: 'local', name: 'a' });
    await writeFile(join(directory, 'a.md'), doc('A', ' Changed.'));
    await writeFile(join(directory, 'b.md'), doc('B'));
    now = Date.now() + 10_000;
    await registry.scan();
    expect(registry.local().map((entry) => entry.document.hash)).toEqual([
      hashText(doc('A', ' Changed.')),
      hashText(doc('B')),
    ]);
    // The old text is no longer listed nor offered to new queries, but a conversation under way (it was used) goes on.
    expect(registry.get(oldHash)).toBeUndefined();
    expect(await registry.resolve(oldHash, [])).toBeUndefined();
    expect(await registry.forConversation(oldHash, [])).toMatchObject({
      origin: 'local',
      name: 'a',
      document: { hash: oldHash },
    });
    expect(registry.text(oldHash)).toBe(doc('A'));
    await unlink(join(directory, 'b.md'));
    await registry.scan();
    expect(registry.local().map((entry) => entry.name)).toEqual(['a']);
    // Unused for the live window (a conversation TTL): forgotten.
    now += 60_000;
    await registry.scan();
    expect(await registry.forConversation(oldHash, [])).toBeUndefined();
    expect(registry.text(oldHash)).toBeUndefined();
  });

  it('registers a file only once it has settled, and drops its old version from the listing at once (finding 11)', async () => {
    const now = Date.now() + 10_000;
    const { registry, directory } = await setup({ 'big.md': doc('Big') }, { now: () => now });
    await registry.start();
    const file = join(directory, 'big.md');
    const whole = doc('Big', ` ${'x'.repeat(100_000)}`);
    // A writer half-way through rewriting the file in place, its last write 100 ms ago.
    await writeFile(file, whole.slice(0, 50_000));
    await utimes(file, new Date(now), new Date(now - 100));
    await registry.scan();
    expect(registry.local()).toEqual([]);
    expect(registry.get(hashText(doc('Big')))).toBeUndefined();
    expect(registry.get(hashText(whole.slice(0, 50_000)))).toBeUndefined();
    // Written to the end; 499 ms after its last write it is still not taken, 500 ms after it is.
    await writeFile(file, whole);
    await utimes(file, new Date(now), new Date(now - 499));
    await registry.scan();
    expect(registry.local()).toEqual([]);
    await utimes(file, new Date(now), new Date(now - 500));
    await registry.scan();
    expect(registry.local().map((entry) => entry.document.hash)).toEqual([hashText(whole)]);
  });

  it('scans again by itself when an unsettled file should have settled', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    try {
      const start = Date.now();
      const { registry, directory } = await setup({});
      await registry.start();
      const file = join(directory, 'late.md');
      await writeFile(file, doc('Late'));
      await utimes(file, new Date(start), new Date(start));
      await registry.scan();
      expect(registry.local()).toEqual([]);
      await vi.advanceTimersByTimeAsync(600);
      await registry.scan();
      expect(registry.local().map((entry) => entry.name)).toEqual(['late']);
    } finally {
      vi.useRealTimers();
    }
  });

  it("holds a peer's document for its query only, and stores and lists it once adopted (finding 3)", async () => {
    const { registry, memory, directory, logger } = await setup();
    await registry.start();
    const text = doc('Learned');
    const hash = hashText(text);
    expect(await registry.resolve(hash, [])).toBeUndefined();
    const known = await registry.resolve(hash, [encodeDataUri(text)]);
    expect(known).toMatchObject({ origin: 'candidate', document: { hash, text } });
    // Not chosen yet: nothing stored, nothing listed or served.
    expect(await memory.keys('documents/')).toEqual([]);
    expect(registry.learned()).toEqual([]);
    expect(registry.get(hash)).toBeUndefined();
    expect(registry.text(hash)).toBeUndefined();
    expect(await registry.adopt(known!)).toMatchObject({ origin: 'learned' });
    expect(registry.learned().map((document) => document.hash)).toEqual([hash]);
    expect(registry.text(hash)).toBe(text);
    expect(await memory.get(`documents/${hash}`)).toMatchObject({ text, name: 'Learned' });

    const again = new ProtocolRegistry({ directory, memory, logger, watch: false });
    await again.start();
    expect(again.get(hash)).toMatchObject({ origin: 'learned', document: { text } });
    again.close();
  });

  it('caps the candidates it holds in count, the oldest going first', async () => {
    const { registry, memory } = await setup({}, { learned: { maxCandidates: 3 } });
    await registry.start();
    const texts = ['C1', 'C2', 'C3', 'C4'].map((name) => doc(name));
    for (const text of texts)
      expect((await registry.resolve(hashText(text), [encodeDataUri(text)]))?.origin).toBe('candidate');
    expect(registry.learnedSize()).toEqual({ count: 0, bytes: 0, candidates: 3 });
    expect(await registry.resolve(hashText(texts[0]!), [])).toBeUndefined();
    expect(await registry.resolve(hashText(texts[3]!), [])).toMatchObject({ origin: 'candidate' });
    expect(await memory.keys('documents/')).toEqual([]);
  });

  it('caps learned documents in count and bytes, evicting the least recently used, never one in use', async () => {
    let now = 1_000_000;
    const { registry, memory } = await setup(
      {},
      { now: () => now, learned: { maxCount: 3, maxBytes: 100_000, liveMs: 1000 } },
    );
    await registry.start();
    const learn = async (text: string) =>
      registry.adopt((await registry.resolve(hashText(text), [encodeDataUri(text)]))!);
    const [a, b, c, d] = ['A', 'B', 'C', 'D'].map((name) => doc(name));
    for (const text of [a!, b!, c!]) {
      await learn(text);
      now += 2000;
    }
    // A is used again: B is now the least recently used.
    await registry.resolve(hashText(a!), []);
    now += 2000;
    await learn(d!);
    expect(registry.learned().map((document) => document.metadata.name)).toEqual(['C', 'A', 'D']);
    expect((await memory.keys('documents/')).sort()).toEqual(
      [a!, c!, d!].map((text) => `documents/${hashText(text)}`).sort(),
    );

    // Everything in use (used within liveMs): the newcomer is not stored, and stays a candidate for its query.
    for (const text of [a!, c!, d!]) await registry.resolve(hashText(text), []);
    const e = doc('E');
    expect(await learn(e)).toMatchObject({ origin: 'candidate' });
    expect(registry.learned()).toHaveLength(3);
    expect(await memory.get(`documents/${hashText(e)}`)).toBeUndefined();

    // Bytes: one large document pushes out older ones until the total fits.
    now += 2000;
    const large = doc('Large', 'x'.repeat(60_000));
    await learn(large);
    expect(registry.learnedSize().bytes).toBeLessThanOrEqual(100_000);
    expect(registry.learned().map((document) => document.metadata.name)).toContain('Large');
  });

  it('finds a document another process learned in the shared memory without reading sources', async () => {
    const { registry, memory } = await setup();
    await registry.start();
    const text = doc('Shared');
    const hash = hashText(text);
    await memory.set(`documents/${hash}`, { text });
    expect(await registry.resolve(hash, ['data:text/plain,not-the-document'])).toMatchObject({
      origin: 'learned',
      document: { hash },
    });
    expect(registry.text(hash)).toBe(text);
    await memory.set(`documents/${hashText(doc('Later'))}`, { text: doc('Later') });
    await registry.refreshLearned();
    expect(
      registry
        .learned()
        .map((document) => document.metadata.name)
        .sort(),
    ).toEqual(['Later', 'Shared']);
  });

  it('refuses a source whose bytes hash to something else', async () => {
    const { registry, logger } = await setup();
    await registry.start();
    const hash = hashText(doc('Wanted'));
    expect(await registry.resolve(hash, [encodeDataUri(doc('Other'))])).toBeUndefined();
    expect(logger.lines.some((line) => line.includes(`not ${hash}`))).toBe(true);
  });
});
