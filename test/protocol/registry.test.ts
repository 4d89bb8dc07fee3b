import { mkdtemp, mkdir, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../src/log.js';
import { InMemoryMemory } from '../../src/memory/file.js';
import { encodeDataUri } from '../../src/protocol/data-uri.js';
import { hashText } from '../../src/protocol/document.js';
import { ProtocolRegistry } from '../../src/protocol/registry.js';

const doc = (name: string, extra = '') => `---\nname: ${name}\ndescription: ${name} things\nmultiround: false\n---\nSend JSON.${extra}\n`;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function setup(files: Record<string, string> = {}) {
  const root = await mkdtemp(join(tmpdir(), 'agora-registry-'));
  const directory = join(root, 'protocols');
  await mkdir(directory);
  for (const [name, text] of Object.entries(files)) await writeFile(join(directory, name), text);
  const memory = new InMemoryMemory();
  const logger = memoryLogger();
  const registry = new ProtocolRegistry({ directory, memory, logger, watch: false });
  cleanups.push(async () => {
    registry.close();
    await rm(root, { recursive: true, force: true });
  });
  return { directory, memory, logger, registry };
}

describe('ProtocolRegistry', () => {
  it('loads the folder\'s documents by name and hash, and skips invalid ones with a warning', async () => {
    const { registry, logger } = await setup({ 'weather.md': doc('Weather'), 'bad.md': '---\nname: x\n---\n', 'notes.txt': 'ignored' });
    await registry.start();
    expect(registry.local().map((entry) => entry.name)).toEqual(['weather']);
    expect(registry.get(hashText(doc('Weather')))).toMatchObject({ origin: 'local', name: 'weather' });
    expect(logger.lines.some((line) => line.startsWith('warn protocol') && line.includes('bad.md skipped'))).toBe(true);
  });

  it('sees added, changed and removed files at the next scan, keeping a changed document known by hash', async () => {
    const { registry, directory } = await setup({ 'a.md': doc('A') });
    await registry.start();
    const oldHash = hashText(doc('A'));
    await writeFile(join(directory, 'a.md'), doc('A', ' Changed.'));
    await writeFile(join(directory, 'b.md'), doc('B'));
    await registry.scan();
    expect(registry.local().map((entry) => entry.document.hash)).toEqual([hashText(doc('A', ' Changed.')), hashText(doc('B'))]);
    // The old text stays known by hash for conversations under way, though local() no longer lists it.
    expect(registry.get(oldHash)).toMatchObject({ origin: 'local' });
    expect(registry.get(oldHash)?.name).toBe('a');
    await unlink(join(directory, 'b.md'));
    await registry.scan();
    expect(registry.local().map((entry) => entry.name)).toEqual(['a']);
  });

  it('learns a document from its data: source, persists it, and reads it back in a new registry', async () => {
    const { registry, memory, directory, logger } = await setup();
    await registry.start();
    const text = doc('Learned');
    const hash = hashText(text);
    expect(await registry.resolve(hash, [])).toBeUndefined();
    const known = await registry.resolve(hash, [encodeDataUri(text)]);
    expect(known).toMatchObject({ origin: 'learned', document: { hash, text } });
    expect(registry.learned().map((document) => document.hash)).toEqual([hash]);
    expect(await memory.get(`documents/${hash}`)).toMatchObject({ text, name: 'Learned' });

    const again = new ProtocolRegistry({ directory, memory, logger, watch: false });
    await again.start();
    expect(again.get(hash)).toMatchObject({ origin: 'learned', document: { text } });
    again.close();
  });

  it('finds a document another process learned in the shared memory without reading sources', async () => {
    const { registry, memory } = await setup();
    await registry.start();
    const text = doc('Shared');
    const hash = hashText(text);
    await memory.set(`documents/${hash}`, { text });
    expect(await registry.resolve(hash, ['data:text/plain,not-the-document'])).toMatchObject({ origin: 'learned', document: { hash } });
    await memory.set(`documents/${hashText(doc('Later'))}`, { text: doc('Later') });
    await registry.refreshLearned();
    expect(registry.learned().map((document) => document.metadata.name).sort()).toEqual(['Later', 'Shared']);
  });

  it('refuses a source whose bytes hash to something else', async () => {
    const { registry, logger } = await setup();
    await registry.start();
    const hash = hashText(doc('Wanted'));
    expect(await registry.resolve(hash, [encodeDataUri(doc('Other'))])).toBeUndefined();
    expect(logger.lines.some((line) => line.includes(`not ${hash}`))).toBe(true);
  });
});
