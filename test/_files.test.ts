import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  describeLoadError,
  importTypeScript,
  isModuleFile,
  listModules,
  watchFolder,
  writeFileAtomic,
} from '../src/_files.js';

let root: string;
afterEach(async () => {
  vi.useRealTimers();
  if (root) await rm(root, { recursive: true, force: true });
});
const fresh = async () => (root = await mkdtemp(join(tmpdir(), 'agora-files-')));

describe('writeFileAtomic', () => {
  it('creates missing folders, replaces the content and leaves no temporary file', async () => {
    const dir = await fresh();
    const file = join(dir, 'a', 'b', 'value.json');
    await writeFileAtomic(file, 'one');
    await writeFileAtomic(file, 'two');
    expect(await readFile(file, 'utf8')).toBe('two');
    expect(await readdir(join(dir, 'a', 'b'))).toEqual(['value.json']);
  });

  it('fails, leaving no temporary file, when the target is a folder', async () => {
    const dir = await fresh();
    await mkdir(join(dir, 'taken'));
    await expect(writeFileAtomic(join(dir, 'taken'), 'x')).rejects.toThrow();
    expect(await readdir(dir)).toEqual(['taken']);
  });
});

describe('isModuleFile and listModules', () => {
  it('keeps modules, not declarations, tests, hidden or underscored files', () => {
    expect(['a.ts', 'a.mts', 'a.js', 'a.mjs'].every(isModuleFile)).toBe(true);
    expect(['a.d.ts', 'a.test.ts', '.a.ts', '_a.ts', 'a.md', 'a.json'].some(isModuleFile)).toBe(false);
  });

  it('lists a folder’s module files sorted, and nothing for a missing folder', async () => {
    const dir = await fresh();
    for (const name of ['b.ts', 'a.js', 'c.test.ts', 'notes.md']) await writeFile(join(dir, name), '');
    await mkdir(join(dir, 'sub.ts'));
    expect(await listModules(dir)).toEqual([join(dir, 'a.js'), join(dir, 'b.ts')]);
    expect(await listModules(join(dir, 'missing'))).toEqual([]);
  });
});

describe('importTypeScript', () => {
  it('bundles a TypeScript file with its relative imports and imports it', async () => {
    const dir = await fresh();
    await writeFile(join(dir, 'helper.ts'), 'export const twice = (n: number): number => n * 2;\n');
    await writeFile(
      join(dir, 'main.ts'),
      "import { twice } from './helper';\nimport { z } from 'zod';\nexport default twice(z.number().parse(21));\n",
    );
    const module = await importTypeScript(join(dir, 'main.ts'), join(dir, 'cache'));
    expect(module.default).toBe(42);
  });

  it('describes a syntax error on one line, with its position', async () => {
    const dir = await fresh();
    await writeFile(join(dir, 'broken.ts'), 'export default {{;\n');
    const error = await importTypeScript(join(dir, 'broken.ts'), join(dir, 'cache')).catch((caught: unknown) => caught);
    expect(describeLoadError(error)).toMatch(/\(line 1, column \d+\)$/);
    expect(describeLoadError(new Error('plain'))).toBe('Error: plain');
  });
});

describe('watchFolder', () => {
  it('calls back after a change in the folder', async () => {
    const dir = await fresh();
    const changed = vi.fn();
    const seen = new Promise<void>((resolve) => changed.mockImplementation(() => resolve()));
    const stop = watchFolder(dir, changed, 20);
    await writeFile(join(dir, 'a.ts'), '1');
    await seen;
    stop();
  });

  it('does not call back after it was stopped', () => {
    vi.useFakeTimers();
    const changed = vi.fn();
    const stop = watchFolder(join(tmpdir(), `agora-missing-${process.pid}`, 'never'), changed, 20);
    stop();
    vi.advanceTimersByTime(1_000);
    expect(changed).not.toHaveBeenCalled();
  });
});
