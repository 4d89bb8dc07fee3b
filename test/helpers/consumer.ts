// A project of a user's own, installed with no network: its lockfile is made from ours (the same versions, fetched
// from npm's cache by their integrity), and what `npm pack` would ship from a folder shaped like this repository.
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

type LockEntry = {
  name?: string;
  version?: string;
  resolved?: string;
  integrity?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  dev?: boolean;
  devOptional?: boolean;
  peer?: boolean;
  optional?: boolean;
  link?: boolean;
  [key: string]: unknown;
};
type Lock = { packages: Record<string, LockEntry> };
type Manifest = Record<string, unknown> & { name: string; version: string; dependencies?: Record<string, string> };

/** The lock key a package named `name` resolves to from the package at `from` (Node's lookup, up the folders). */
function resolveKey(packages: Lock['packages'], from: string, name: string): string | undefined {
  for (let at = from; ;) {
    const key = `${at ? `${at}/` : ''}node_modules/${name}`;
    if (packages[key]) return key;
    if (!at) return undefined;
    const cut = at.lastIndexOf('/node_modules/');
    at = cut < 0 ? '' : at.slice(0, cut);
  }
}

/** Every lock key `names` need (dependencies and optional ones, transitively), resolved from the root. */
function closure(packages: Lock['packages'], names: string[]): Set<string> {
  const seen = new Set<string>();
  const todo = names.map((name) => resolveKey(packages, '', name)).filter((key): key is string => Boolean(key));
  while (todo.length) {
    const key = todo.pop()!;
    if (seen.has(key)) continue;
    seen.add(key);
    const entry = packages[key]!;
    for (const name of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) {
      const found = resolveKey(packages, key, name);
      if (found) todo.push(found);
    }
  }
  return seen;
}

/**
 * The lockfile of a project `name` that depends on the packed `tarball` of the package `manifest` (its runtime
 * dependencies, at the versions `lock` pins) and on `dev` (by name, from `lock`). Every entry gets the registry URL
 * npm would fetch, so `npm ci --offline` takes each from the cache by its integrity.
 */
export function consumerLock(
  lock: Lock,
  manifest: Manifest,
  options: { name: string; tarball: string; dev: string[] },
): Lock & Record<string, unknown> {
  const runtime = Object.keys(manifest.dependencies ?? {});
  const packages: Lock['packages'] = {
    '': {
      name: options.name,
      version: '1.0.0',
      dependencies: { [manifest.name]: `file:${options.tarball}` },
      devDependencies: Object.fromEntries(options.dev.map((name) => [name, '*'])),
    },
    [`node_modules/${manifest.name}`]: {
      version: manifest.version,
      resolved: `file:${options.tarball}`,
      dependencies: manifest.dependencies,
      ...(manifest.peerDependencies ? { peerDependencies: manifest.peerDependencies } : {}),
      ...(manifest.peerDependenciesMeta ? { peerDependenciesMeta: manifest.peerDependenciesMeta } : {}),
      ...(manifest.bin ? { bin: manifest.bin } : {}),
    },
  };
  const devKeys = closure(lock.packages, options.dev);
  for (const key of new Set([...closure(lock.packages, runtime), ...devKeys])) {
    const { dev: _dev, devOptional: _devOptional, peer: _peer, ...entry } = lock.packages[key]!;
    if (entry.link) throw new Error(`${key} is a link in package-lock.json: it cannot be installed elsewhere`);
    const name = entry.name ?? key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
    const file = `${name.split('/').at(-1)}-${entry.version}.tgz`;
    packages[key] = { ...entry, resolved: entry.resolved ?? `https://registry.npmjs.org/${name}/-/${file}` };
  }
  return { name: options.name, version: '1.0.0', lockfileVersion: 3, requires: true, packages };
}

/**
 * What `npm pack` ships from a folder with this repository's package.json and the files an agent leaves behind
 * (generated routines, local state) beside the ones the package is made of.
 */
export async function packageFiles(root: string, base: string): Promise<string[]> {
  const dir = await mkdtemp(join(base, 'packlist-'));
  await copyFile(join(root, 'package.json'), join(dir, 'package.json'));
  const planted = [
    'dist/index.js',
    'dist/index.d.ts',
    'bin/agora.js',
    'protocols/unit-conversion.md',
    'routines/unit-conversion.ts',
    'tools/convert-units.ts',
    'routines/generated/unit-conversion-1a2b3c.ts',
    'routines/generated/.agora/status.json',
    '.agora/memory.json',
    'protocols/.agora/cache.json',
  ];
  for (const file of planted) {
    await mkdir(dirname(join(dir, file)), { recursive: true });
    await writeFile(join(dir, file), '// planted\n');
  }
  const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: dir,
    env: { ...process.env, npm_config_offline: 'true' },
  });
  return (JSON.parse(stdout) as { files: { path: string }[] }[])[0]!.files.map((file) => file.path);
}
