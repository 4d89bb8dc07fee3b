// The safety rescan: a watch event the platform lost (an overflowed inotify queue is not reported) must not leave a
// document unseen for ever. With no watcher at all, a periodic rescan finds what changed; on an unchanged folder it
// reads no file (reads counted through the one function that reads protocol files) and the listing does not move.
import { mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { memoryLogger, silentLogger } from '../../src/log.js';
import { InMemoryMemory } from '../../src/memory/file.js';
import { hashText } from '../../src/protocol/document.js';
import { ProtocolFolder } from '../../src/protocol/folder.js';
import { ProtocolRegistry } from '../../src/protocol/registry.js';
import { Receiver } from '../../src/receiver.js';

const reads = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../src/protocol/_read.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/protocol/_read.js')>();
  return {
    ...original,
    statAndReadSync: (...args: Parameters<typeof original.statAndReadSync>) => {
      reads.count += 1;
      return original.statAndReadSync(...args);
    },
  };
});

const doc = (name: string, extra = '') =>
  `---\nname: ${name}\ndescription: ${name} things\nmultiround: false\n---\nSend JSON.${extra}\n`;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

// No timed assertions: each test waits for the state it expects (vi.waitFor), however long the machine takes.
const until = (check: () => void) => vi.waitFor(check, { timeout: 20_000, interval: 20 });

async function folderWith(count: number): Promise<{ root: string; directory: string }> {
  const root = await mkdtemp(join(tmpdir(), 'agora-rescan-'));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  const directory = join(root, 'protocols');
  await mkdir(directory);
  await Promise.all(
    Array.from({ length: count }, (_, index) => writeFile(join(directory, `d${index}.md`), doc(`d${index}`))),
  );
  return { root, directory };
}

/** A registry with no watcher, rescanning every `rescanMs`; files read as soon as they appear. */
async function unwatched(directory: string, rescanMs: number): Promise<ProtocolRegistry> {
  const registry = new ProtocolRegistry({
    directory,
    memory: new InMemoryMemory(),
    logger: memoryLogger(),
    watch: false,
    settleMs: 0,
    rescanMs,
  });
  cleanups.push(async () => registry.close());
  await registry.start();
  return registry;
}

describe('the safety rescan of protocols/', () => {
  it('finds a document added, changed and removed with no watcher, by the periodic rescan alone', async () => {
    const { directory } = await folderWith(3);
    const registry = await unwatched(directory, 30);
    const names = () => registry.local().map(({ name }) => name);
    expect(names()).toEqual(['d0', 'd1', 'd2']);
    await writeFile(join(directory, 'late.md'), doc('late'));
    await until(() => expect(names()).toEqual(['d0', 'd1', 'd2', 'late']));
    await writeFile(join(directory, 'd0.md'), doc('d0', ' Changed.'));
    await until(() => expect(registry.get(hashText(doc('d0', ' Changed.')))?.name).toBe('d0'));
    await unlink(join(directory, 'd1.md'));
    await until(() => expect(names()).toEqual(['d0', 'd2', 'late']));
  });

  it('reads no file and moves no listing when nothing changed (1,000 documents, several rescans)', async () => {
    const { directory } = await folderWith(1000);
    const scans = vi.spyOn(ProtocolFolder.prototype, 'scan');
    const registry = await unwatched(directory, 20);
    expect(registry.local()).toHaveLength(1000);
    const version = registry.localVersion;
    const listing = registry.local();
    const readsBefore = reads.count;
    // The first scan and at least three rescans, each done (a scan of a folder is awaited by the next one's start).
    await until(() => expect(scans.mock.calls.length).toBeGreaterThanOrEqual(5));
    await registry.scan();
    expect(reads.count).toBe(readsBefore);
    expect(registry.localVersion).toBe(version);
    expect(registry.local()).toBe(listing);
  });

  it('is off by default and with 0', async () => {
    const { directory } = await folderWith(1);
    const off = await unwatched(directory, 0);
    const unset = new ProtocolRegistry({
      directory,
      memory: new InMemoryMemory(),
      logger: memoryLogger(),
      watch: false,
      settleMs: 0,
    });
    cleanups.push(async () => unset.close());
    await unset.start();
    const on = await unwatched(directory, 20);
    const scans = vi.spyOn(ProtocolFolder.prototype, 'scan');
    await writeFile(join(directory, 'late.md'), doc('late'));
    // Once the rescanning registry saw it, several intervals went by: the others did not scan at all.
    await until(() => expect(on.local().map(({ name }) => name)).toEqual(['d0', 'late']));
    expect(scans.mock.contexts.length).toBeGreaterThan(0);
    expect(new Set(scans.mock.contexts).size).toBe(1);
    expect(off.local().map(({ name }) => name)).toEqual(['d0']);
    expect(unset.local().map(({ name }) => name)).toEqual(['d0']);
  });
});

describe('the safety rescan of a receiver (rescanIntervalMs)', () => {
  it('finds a new document and a new routine with watch: false, and reloads nothing while the folders are unchanged', async () => {
    const { root, directory } = await folderWith(2);
    await mkdir(join(root, 'routines'));
    await writeFile(join(root, 'routines', 'd0.ts'), "export default () => ({ from: 'd0' });");
    const receiver = await Receiver.start({
      dir: root,
      llm: null,
      logger: silentLogger,
      watch: false,
      rescanIntervalMs: 30,
    });
    cleanups.push(() => receiver.close());
    expect(receiver.routines.size).toBe(1);
    const version = receiver.registry.localVersion;
    const readsBefore = reads.count;
    const reloads = vi.spyOn(receiver, 'reloadRoutines');
    // Several rescans of unchanged folders: nothing read, nothing reloaded.
    const scans = vi.spyOn(ProtocolFolder.prototype, 'scan');
    await until(() => expect(scans.mock.calls.length).toBeGreaterThanOrEqual(3));
    await receiver.registry.scan();
    expect(reads.count).toBe(readsBefore);
    expect(receiver.registry.localVersion).toBe(version);
    expect(reloads).not.toHaveBeenCalled();

    await writeFile(join(directory, 'd2.md'), doc('d2'));
    await writeFile(join(root, 'routines', 'd2.ts'), "export default () => ({ from: 'd2' });");
    await until(() => expect(receiver.routines.has('d2')).toBe(true));
    await until(() => expect(receiver.registry.get(hashText(doc('d2')))?.name).toBe('d2'));
    expect(await receiver.query({ protocolHash: hashText(doc('d2')), body: {} })).toEqual({
      status: 'success',
      body: { from: 'd2' },
    });
  });
});
