// Builds dist/ (tsc -p tsconfig.build.json) when it is missing or older than a file of src/: what `npm run prepare`
// does (so an install from a git URL or a clone gets the compiled package) and what `npm test` does first.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestSource(path) : statSync(path).mtimeMs);
  }
  return newest;
}

function builtAt() {
  try {
    return statSync('dist/index.js').mtimeMs;
  } catch {
    return -1;
  }
}

/** Builds dist/ when stale; `why` says what for. Returns the exit status (0 when nothing had to be done). */
export function buildIfStale(why) {
  if (builtAt() >= newestSource('src')) return 0;
  console.error(`building dist/ (tsc -p tsconfig.build.json), ${why}…`);
  const tsc = createRequire(pathToFileURL(join(process.cwd(), 'package.json'))).resolve('typescript/bin/tsc');
  const build = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
  if (build.status !== 0) console.error('the build failed');
  return build.status ?? 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href)
  process.exitCode = buildIfStale(process.argv[2] ?? 'which the package runs from');
