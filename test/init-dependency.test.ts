// src/init-dependency.ts: where a new agent's agora-agents dependency points.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { frameworkDependency } from '../src/init-dependency.js';

let base: string;
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'agora-dependency-'));
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

/** A project that installed the framework with `spec`: its folder and the framework's root in its node_modules. */
async function host(name: string, spec: string | undefined) {
  const dir = join(base, name);
  const root = join(dir, 'node_modules', 'agora-agents');
  await mkdir(root, { recursive: true });
  await writeFile(
    join(dir, 'package.json'),
    JSON.stringify({ name, ...(spec ? { dependencies: { 'agora-agents': spec } } : {}) }),
  );
  return { dir, root };
}

describe('frameworkDependency', () => {
  it('points to this checkout by a relative file: path, once it is built', async () => {
    const checkout = join(base, 'checkout');
    await mkdir(join(checkout, 'dist'), { recursive: true });
    expect(() => frameworkDependency(join(base, 'agents', 'mine'), checkout, '0.1.0')).toThrow(
      /is not built: run `npm run build` there first/,
    );
    await writeFile(join(checkout, 'dist', 'index.js'), '');
    expect(frameworkDependency(join(base, 'agents', 'mine'), checkout, '0.1.0')).toMatchObject({
      spec: 'file:../../checkout',
      origin: 'checkout',
    });
  });

  it('points to the tarball the framework was installed from, relative to the new agent', async () => {
    await writeFile(join(base, 'agora-agents-0.1.0.tgz'), 'tarball');
    const { dir, root } = await host('from-tarball', 'file:../agora-agents-0.1.0.tgz');
    const dependency = frameworkDependency(join(dir, 'my-agent'), root, '0.1.0');
    expect(dependency).toMatchObject({ spec: 'file:../../agora-agents-0.1.0.tgz', origin: 'tarball' });
    expect(dependency.description).toContain('agora-agents-0.1.0.tgz');
  });

  it('depends on the registry version when installed from a registry (npx agora-agents init)', async () => {
    const { dir, root } = await host('from-registry', '^0.1.0');
    expect(frameworkDependency(join(dir, 'my-agent'), root, '0.1.0')).toMatchObject({
      spec: '^0.1.0',
      origin: 'registry',
    });
    const bare = await host('no-spec', undefined);
    expect(frameworkDependency(join(bare.dir, 'my-agent'), bare.root, '0.2.0')).toMatchObject({
      spec: '^0.2.0',
      origin: 'registry',
    });
  });

  it('takes --framework as given: a version as it is, a path checked and made relative', async () => {
    expect(frameworkDependency(join(base, 'a'), join(base, 'checkout'), '0.1.0', '^0.3.0')).toMatchObject({
      spec: '^0.3.0',
      origin: 'given',
    });
    expect(
      frameworkDependency(join(base, 'a'), join(base, 'checkout'), '0.1.0', join(base, 'agora-agents-0.1.0.tgz')),
    ).toMatchObject({ spec: 'file:../agora-agents-0.1.0.tgz', origin: 'tarball' });
    expect(() => frameworkDependency(join(base, 'a'), join(base, 'checkout'), '0.1.0', '/nonexistent')).toThrow(
      'framework /nonexistent: no such file or folder',
    );
  });
});
