import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkKey, FileMemory, InMemoryMemory } from '../../src/memory/file.js';
import { describeMemoryContract } from './memory-contract.js';

const folders: string[] = [];
const freshFolder = async () => {
  const folder = await mkdtemp(join(tmpdir(), 'agora-memory-'));
  folders.push(folder);
  return folder;
};

afterAll(async () => {
  await Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true })));
});

describeMemoryContract('FileMemory', async () => new FileMemory(await freshFolder()));
describeMemoryContract('InMemoryMemory', () => new InMemoryMemory());

describe('checkKey', () => {
  it('returns a valid key as it is', () => {
    expect(checkKey('documents/a.b_c-d')).toBe('documents/a.b_c-d');
  });
});

describe('FileMemory', () => {
  it('keeps one JSON file per key under its folder, and survives a new instance', async () => {
    const root = await freshFolder();
    await new FileMemory(root).set('approvals/x', { ok: true });
    expect(JSON.parse(await readFile(join(root, 'approvals', 'x.json'), 'utf8'))).toEqual({ ok: true });
    expect(await new FileMemory(root).get('approvals/x')).toEqual({ ok: true });
  });

  it('reads a corrupt file as missing', async () => {
    const root = await freshFolder();
    const memory = new FileMemory(root);
    await memory.set('values/a', 1);
    await writeFile(join(root, 'values', 'a.json'), '{ not json');
    expect(await memory.get('values/a')).toBeUndefined();
    expect(await memory.increment('values/a')).toBe(1);
  });
});
