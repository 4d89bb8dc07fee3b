#!/usr/bin/env node
// Runs the CLI: the compiled one (dist/, built by `npm ci`'s prepare step and before packing), else, in a checkout that
// has run `npm ci` but not built, the TypeScript source through tsx (a dev dependency). In a checkout that is not
// installed at all, it says what to run instead of failing with a module error.
import { existsSync } from 'node:fs';

const root = new URL('..', import.meta.url);
const compiled = new URL('dist/cli/main.js', root);
const source = new URL('src/cli/main.ts', root);

async function load() {
  if (existsSync(compiled)) return import(compiled.href);
  if (existsSync(source)) {
    const { register } = await import('tsx/esm/api');
    register();
    return import(source.href);
  }
  return import(compiled.href);
}

let main;
try {
  ({ main } = await load());
} catch (error) {
  if (!error || typeof error !== 'object' || error.code !== 'ERR_MODULE_NOT_FOUND') throw error;
  console.error(
    `agora: agora-agents is not installed in ${root.pathname} yet (${error.message.split('\n')[0]}): run \`npm ci\` there first, then try again`,
  );
  process.exit(1);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    console.error(`agora: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  },
);
