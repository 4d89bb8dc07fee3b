import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../../src/log.js';
import { InMemoryMemory } from '../../src/memory/file.js';
import { hashText } from '../../src/protocol/document.js';
import { ProtocolFolder } from '../../src/protocol/folder.js';
import { ProtocolRegistry } from '../../src/protocol/registry.js';

const doc = (name: string, extra = '') =>
  `---\nname: ${name}\ndescription: ${name} things\nmultiround: false\n---\nSend JSON.${extra}\n`;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A watched registry over a fresh folder, files read as soon as they appear (no settle wait). */
async function watched(files: Record<string, string> = {}) {
  const root = await mkdtemp(join(tmpdir(), 'agora-folder-'));
  const directory = join(root, 'protocols');
  await mkdir(directory);
  for (const [name, text] of Object.entries(files)) await writeFile(join(directory, name), text);
  const registry = new ProtocolRegistry({
    directory,
    memory: new InMemoryMemory(),
    logger: memoryLogger(),
    watch: true,
    settleMs: 0,
  });
  await registry.start();
  cleanups.push(async () => {
    registry.close();
    await rm(root, { recursive: true, force: true });
  });
  const names = () => registry.local().map(({ name }) => name);
  return { directory, registry, names };
}

// No timed assertions: each test polls for the state it expects (vi.waitFor), however long the machine takes.
const until = (check: () => void) => vi.waitFor(check, { timeout: 20_000, interval: 20 });

describe('ProtocolFolder watched', () => {
  it('reflects a file added, changed, removed and renamed, each by the file that changed, with no whole scan', async () => {
    const { directory, registry, names } = await watched({ 'a.md': doc('a'), 'b.md': doc('b') });
    const scan = vi.spyOn(ProtocolFolder.prototype, 'scan');
    await writeFile(join(directory, 'c.md'), doc('c'));
    await until(() => expect(names()).toEqual(['a', 'b', 'c']));
    await writeFile(join(directory, 'a.md'), doc('a', ' Changed.'));
    await until(() => expect(registry.get(hashText(doc('a', ' Changed.')))?.name).toBe('a'));
    expect(registry.get(hashText(doc('a')))).toBeUndefined();
    await unlink(join(directory, 'b.md'));
    await until(() => expect(names()).toEqual(['a', 'c']));
    await rename(join(directory, 'c.md'), join(directory, 'd.md'));
    await until(() => expect(names()).toEqual(['a', 'd']));
    expect(registry.get(hashText(doc('c')))?.name).toBe('d');
    expect(scan).not.toHaveBeenCalled();
  });

  it("ignores an editor's swap and backup files: the listing does not move and nothing is reread", async () => {
    const { directory, registry, names } = await watched({ 'a.md': doc('a') });
    const version = registry.localVersion;
    const scan = vi.spyOn(ProtocolFolder.prototype, 'scan');
    for (const name of ['.a.md.swp', 'a.md~', '4913', '#a.md#', '.#a.md'])
      await writeFile(join(directory, name), doc('swap'));
    // A document written after them: once it is listed, every event before it has been handled.
    await writeFile(join(directory, 'z.md'), doc('z'));
    await until(() => expect(names()).toEqual(['a', 'z']));
    expect(scan).not.toHaveBeenCalled();
    // One change of the listing (z.md), none for the swap files.
    expect(registry.localVersion).not.toBe(version);
    expect(registry.get(hashText(doc('swap')))).toBeUndefined();
  });

  it('reflects a burst of 1,000 files exactly, then their removal', async () => {
    const { directory, names } = await watched({ 'keep.md': doc('keep') });
    const expected = Array.from({ length: 1000 }, (_, index) => `p${String(index).padStart(4, '0')}`);
    for (const name of expected) await writeFile(join(directory, `${name}.md`), doc(name));
    await until(() => expect(names()).toEqual(['keep', ...expected]));
    for (const name of expected.slice(0, 500)) await unlink(join(directory, `${name}.md`));
    await until(() => expect(names()).toEqual(['keep', ...expected.slice(500)]));
  });

  it('keeps the same text under two names listed until both are gone', async () => {
    const { directory, registry, names } = await watched({ 'a.md': doc('same'), 'b.md': doc('same') });
    expect(names()).toHaveLength(1);
    const [first, other] = names()[0] === 'a' ? ['a', 'b'] : ['b', 'a'];
    await unlink(join(directory, `${first}.md`));
    await until(() => expect(registry.get(hashText(doc('same')))?.name).toBe(other));
    expect(names()).toEqual([other]);
    await unlink(join(directory, `${other}.md`));
    await until(() => expect(names()).toEqual([]));
  });

  it('gives the event loop a turn while it scans 3,000 documents, and lists every one', async () => {
    const root = await mkdtemp(join(tmpdir(), 'agora-folder-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    await Promise.all(
      Array.from({ length: 3000 }, (_, index) => writeFile(join(root, `d${index}.md`), doc(`d${index}`))),
    );
    const folder = new ProtocolFolder({
      directory: root,
      logger: memoryLogger(),
      settleMs: 0,
      liveMs: 1000,
      now: Date.now,
    });
    let turns = 0;
    const ticker = setInterval(() => (turns += 1), 0);
    await folder.scan(true);
    clearInterval(ticker);
    folder.close();
    expect(folder.list()).toHaveLength(3000);
    expect(turns).toBeGreaterThan(0);
  });
});

describe('ProtocolFolder out of file descriptors', () => {
  it('keeps every document listed while reads fail with EMFILE, and takes the change once descriptors are back', async () => {
    const root = await mkdtemp(join(tmpdir(), 'agora-emfile-'));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    for (let index = 0; index < 50; index += 1) await writeFile(join(root, `d${index}.md`), doc(`d${index}`));
    // A child under `ulimit -n 64`: it takes every free descriptor, changes the folder, rescans, then frees them.
    const script = `
      import { openSync, closeSync, writeFileSync } from 'node:fs';
      import { ProtocolFolder } from ${JSON.stringify(resolve('src/protocol/folder.ts'))};
      const doc = ${doc.toString()};
      const folder = new ProtocolFolder({ directory: ${JSON.stringify(root)}, logger: { info() {}, warn() {}, error() {} }, settleMs: 0, liveMs: 1000, now: Date.now });
      await folder.scan(true);
      const before = folder.list().length;
      writeFileSync(${JSON.stringify(join(root, 'new.md'))}, doc('new'));
      const held = [];
      try { for (;;) held.push(openSync('/dev/null', 'r')); } catch (error) { if (error.code !== 'EMFILE') throw error; }
      await folder.scan();
      const during = folder.list().length;
      for (const descriptor of held) closeSync(descriptor);
      while (folder.list().length < before + 1) await new Promise((done) => setTimeout(done, 20));
      process.stdout.write(JSON.stringify({ before, held: held.length, during, after: folder.list().length }));
    `;
    const { stdout } = await promisify(execFile)(
      'bash',
      ['-c', `ulimit -n 64 && exec "${process.execPath}" --import tsx --input-type=module -e "$SCRIPT"`],
      {
        env: { ...process.env, SCRIPT: script },
        timeout: 60_000,
      },
    );
    const result = JSON.parse(stdout) as { before: number; held: number; during: number; after: number };
    expect(result.before).toBe(50);
    expect(result.held).toBeGreaterThan(0);
    expect(result.during).toBe(50);
    expect(result.after).toBe(51);
  });
});
