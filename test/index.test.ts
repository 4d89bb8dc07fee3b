import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');
const recorder = pathToFileURL(resolve(root, 'test/helpers/import-recorder.mjs')).href;

/** The npm packages a fresh Node process loads to run `code` (an ES module body, top-level await allowed). */
async function packagesLoadedBy(code: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--import',
      'tsx',
      '--import',
      recorder,
      '--input-type=module',
      '-e',
      `${code}\nprocess.stdout.write(JSON.stringify(await globalThis.loadedPackages()));`,
    ],
    { cwd: root },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as string[];
}

const SERVER_MACHINERY = [
  'ioredis',
  'ws',
  'quickjs-emscripten',
  'express',
  'rate-limiter-flexible',
  '@anthropic-ai/sdk',
  'openai',
  '@modelcontextprotocol/sdk',
];

describe('the package root', () => {
  it('loads no server machinery when imported', async () => {
    const loaded = await packagesLoadedBy(
      `const root = await import(${JSON.stringify(pathToFileURL(resolve(root, 'src/index.ts')).href)}); if (typeof root.defineRoutine !== 'function' || typeof root.startAgent !== 'function') throw new Error('root exports missing');`,
    );
    expect(loaded).toContain('zod');
    expect(loaded.filter((name) => SERVER_MACHINERY.includes(name))).toEqual([]);
  }, 30_000);

  it('sees the machinery when it is loaded (the recorder works)', async () => {
    const loaded = await packagesLoadedBy(
      `await import(${JSON.stringify(pathToFileURL(resolve(root, 'src/exports/edge.ts')).href)});`,
    );
    expect(loaded).toContain('ws');
  }, 30_000);
});
