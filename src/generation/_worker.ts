// What the two workers of generated code share: the type-checker and the sandbox.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** A worker's plain-JavaScript source as a data: URL module (a .ts file could not start a worker from source). */
export function dataUrl(source: string): URL {
  return new URL(`data:text/javascript;base64,${Buffer.from(source, 'utf8').toString('base64')}`);
}

/** The folder that holds the framework's node_modules (zod resolves from there for builds and type-checks). */
export function frameworkRoot(): string {
  // Two levels up from src/routine/ and from dist/routine/ alike.
  return resolve(here, '../..');
}
