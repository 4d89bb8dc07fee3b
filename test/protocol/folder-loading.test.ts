import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { memoryLogger } from '../../src/log.js';
import { ProtocolFolder } from '../../src/protocol/folder.js';

// A writer that never pauses, as the folder sees it: reads of `busy.md` come back torn (`changed`) while `torn` says
// so, and its modification time is always in the future (so it never looks settled).
const writer = vi.hoisted(() => ({ torn: 0 }));
vi.mock('../../src/protocol/_read.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/protocol/_read.js')>();
  return {
    ...original,
    statAndReadSync: (file: string, wanted: Parameters<typeof original.statAndReadSync>[1]) => {
      const read = original.statAndReadSync(file, wanted);
      if (read && file.endsWith('busy.md') && writer.torn > 0) {
        writer.torn -= 1;
        return { ...read, changed: true };
      }
      return read;
    },
  };
});

const doc = (name: string) => `---\nname: ${name}\ndescription: ${name} things\nmultiround: false\n---\nSend JSON.\n`;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** A folder with `calm.md` and `busy.md`, the latter rewritten without pause (its time an hour ahead). */
async function folderWithBusyFile() {
  const root = await mkdtemp(join(tmpdir(), 'agora-loading-'));
  const directory = join(root, 'protocols');
  await mkdir(directory);
  await writeFile(join(directory, 'calm.md'), doc('calm'));
  await writeFile(join(directory, 'busy.md'), doc('busy'));
  const ahead = new Date(Date.now() + 3600_000);
  await utimes(join(directory, 'busy.md'), ahead, ahead);
  const folder = new ProtocolFolder({
    directory,
    logger: memoryLogger(),
    settleMs: 20,
    liveMs: 300_000,
    loadWaitMs: 200,
    now: Date.now,
  });
  cleanups.push(async () => {
    folder.close();
    await rm(root, { recursive: true, force: true });
  });
  return { folder, busy: join(directory, 'busy.md') };
}

const names = (folder: ProtocolFolder) => folder.list().map(({ name }) => name);

describe('the first load of a folder with a file rewritten without pause', () => {
  it('ends after its bound, with the last complete read of that file', async () => {
    writer.torn = 1;
    const { folder } = await folderWithBusyFile();
    await folder.scan(true);
    // The one read was torn and the file never looks settled: without a bound the load would never end.
    expect(folder.loading).toBe(true);
    expect(names(folder)).toEqual(['calm']);
    await folder.loaded;
    expect(folder.loading).toBe(false);
    expect(names(folder)).toEqual(['busy', 'calm']);
  });

  it('ends after its bound without the file when every read is torn, and lists it once it settles', async () => {
    writer.torn = Number.POSITIVE_INFINITY;
    const { folder, busy } = await folderWithBusyFile();
    await folder.scan(true);
    await folder.loaded;
    expect(folder.loading).toBe(false);
    expect(names(folder)).toEqual(['calm']);
    // The writer stops: reads are whole, and the file's time falls behind.
    writer.torn = 0;
    const past = new Date(Date.now() - 60_000);
    await utimes(busy, past, past);
    await vi.waitFor(() => expect(names(folder)).toEqual(['busy', 'calm']), { timeout: 20_000, interval: 20 });
  });
});
