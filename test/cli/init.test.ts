import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../helpers/cli.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
let base: string;

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'agora-init-'));
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

function npm(args: string[], cwd: string) {
  return spawnSync('npm', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ANTHROPIC_API_KEY: '' },
    timeout: 240_000,
  });
}

/** A lockfile for a scaffolded agent: the framework linked, its devDependencies at the versions of this checkout's lockfile. */
async function lockfileFor(
  dir: string,
  manifest: {
    name: string;
    version: string;
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  },
) {
  const rootLock = JSON.parse(await readFile(join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dependencies?: Record<string, string> }>;
  };
  const rootManifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
    bin: unknown;
    dependencies: Record<string, string>;
  };
  const target = relative(dir, root);
  const packages: Record<string, unknown> = {
    '': {
      name: manifest.name,
      version: manifest.version,
      dependencies: manifest.dependencies,
      devDependencies: manifest.devDependencies,
    },
    [target]: {
      name: rootManifest.name,
      version: rootManifest.version,
      bin: rootManifest.bin,
      dependencies: rootManifest.dependencies,
    },
    'node_modules/agora-agents': { resolved: target, link: true },
  };
  const wanted = Object.keys(manifest.devDependencies);
  for (let name = wanted.shift(); name !== undefined; name = wanted.shift()) {
    const entry = rootLock.packages[`node_modules/${name}`];
    if (!entry) throw new Error(`${name} is not in this checkout's package-lock.json`);
    if (packages[`node_modules/${name}`]) continue;
    packages[`node_modules/${name}`] = entry;
    wanted.push(...Object.keys(entry.dependencies ?? {}));
  }
  return { name: manifest.name, version: manifest.version, lockfileVersion: 3, requires: true, packages };
}

describe('agora init', () => {
  it('scaffolds an agent that installs offline, passes its own test and serves /wellknown', async () => {
    const dir = join(base, 'weather-agent');
    const result = await runCli(['init', dir]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('wrote protocols/unit-conversion.md');
    for (const file of [
      'package.json',
      'tsconfig.json',
      '.gitignore',
      'README.md',
      'test/agent.test.mjs',
      'protocols/unit-conversion.md',
      'routines/unit-conversion.ts',
      'tools/convert-units.ts',
    ]) {
      expect(existsSync(join(dir, file)), file).toBe(true);
    }
    // The root agent is the template: same bytes, not a second copy kept in the framework.
    expect(await readFile(join(dir, 'protocols/unit-conversion.md'), 'utf8')).toBe(
      await readFile(join(root, 'protocols/unit-conversion.md'), 'utf8'),
    );
    expect(await readFile(join(dir, '.gitignore'), 'utf8')).toContain('.agora/');
    const manifest = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'));
    // A relative file: path, so the checkout and the agent can move together; what a tsc and a test need.
    expect(manifest.dependencies['agora-agents']).toBe(`file:${relative(dir, root)}`);
    expect(Object.keys(manifest.devDependencies)).toEqual(['@types/node', 'quickjs-emscripten', 'typescript']);
    expect(manifest.allowScripts).toEqual({ esbuild: true });
    expect(result.stdout).toContain(`agora-agents: "file:${relative(dir, root)}" (this checkout of agora-agents`);

    // Offline and deterministic: a lockfile pinned to what this checkout installed (its tarballs are in npm's cache
    // after `npm ci`; an `npm install` without a lockfile would need registry metadata the cache may not hold).
    await writeFile(join(dir, 'package-lock.json'), JSON.stringify(await lockfileFor(dir, manifest), null, 2));
    const install = npm(['ci', '--offline', '--no-audit', '--no-fund'], dir);
    expect(install.status, install.stderr).toBe(0);
    const test = npm(['test'], dir);
    expect(test.status, `${test.stdout}\n${test.stderr}`).toBe(0);
    expect(test.stdout).toMatch(/# pass 5/);

    const server = spawn('npm', ['start', '--', '--port', '0'], {
      cwd: dir,
      env: { ...process.env, ANTHROPIC_API_KEY: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let output = '';
        const timer = setTimeout(() => reject(new Error(`npm start did not listen:\n${output}`)), 60_000);
        const onData = (chunk: Buffer) => {
          output += chunk.toString();
          const match = /listening on (http:\/\/\S+)/.exec(output);
          if (match) {
            clearTimeout(timer);
            resolve(match[1]!);
          }
        };
        server.stdout!.on('data', onData);
        server.stderr!.on('data', onData);
      });
      const listing = (await (await fetch(`${url}/wellknown`)).json()) as Record<string, string[]>;
      expect(Object.keys(listing)).toHaveLength(2);
    } finally {
      try {
        process.kill(-server.pid!, 'SIGTERM');
      } catch {
        // already gone: the assertion above says why
      }
    }
  }, 300_000);

  it('refuses a folder that is not empty unless --force', async () => {
    const dir = join(base, 'busy');
    await runCli(['init', dir, '--json']);
    await writeFile(join(dir, 'mine.txt'), 'keep me');
    const refused = await runCli(['init', dir]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/is not empty \(use --force/);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    const forced = await runCli(['init', dir, '--force', '--json', '--framework', '^0.1.0']);
    expect(forced.code).toBe(0);
    const json = JSON.parse(forced.stdout) as { files: string[] };
    expect(json.files).toContain('package.json');
    expect(JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')).dependencies['agora-agents']).toBe('^0.1.0');
    expect(await readFile(join(dir, 'mine.txt'), 'utf8')).toBe('keep me');
  });
});
