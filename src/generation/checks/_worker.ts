// Where the type-checker's worker module is, and how to start it from dist/ (plain node) or from src/ (vitest,
// tsx); and the framework root, from which zod resolves for builds and type-checks.
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
// `.ts` when this file runs from src/ through tsx or vitest, `.js` from dist/.
const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';

/** A module of this folder by its stem, as it exists here: `./_typecheck-worker.ts` from src/, `.js` from dist/. */
export function siblingModule(stem: string): URL {
  return new URL(`./${stem}${extension}`, import.meta.url);
}

const compiled = new Map<string, URL>();

/**
 * What to start a worker module with: the `.js` file from dist/; from src/ the `.ts` file compiled by esbuild into
 * a data: URL module, since Node 20 applies no loader (`--import tsx` in execArgv included) to a worker's entry.
 */
export function workerModule(stem: string): URL {
  const module = siblingModule(stem);
  if (extension === '.js') return module;
  let url = compiled.get(stem);
  if (!url) {
    const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
    const result = esbuild.buildSync({
      entryPoints: [fileURLToPath(module)],
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      packages: 'external',
      write: false,
      logLevel: 'silent',
    });
    url = new URL(
      `data:text/javascript;base64,${Buffer.from(result.outputFiles[0]?.text ?? '', 'utf8').toString('base64')}`,
    );
    compiled.set(stem, url);
  }
  return url;
}

/** The folder that holds the framework's node_modules (zod resolves from there for builds and type-checks). */
export function frameworkRoot(): string {
  // Three levels up from src/generation/checks/ and from dist/generation/checks/ alike.
  return resolve(here, '../../..');
}
