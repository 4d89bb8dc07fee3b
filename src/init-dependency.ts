// Where a new agent's `agora-agents` dependency points: the checkout, the tarball or folder the running framework
// was installed from, or the registry; written relative to the new agent, so the folders can move together.
import { existsSync, readFileSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { AgoraError } from './errors.js';

/** Where the dependency came from, for the line that tells the user. */
export type DependencyOrigin = 'checkout' | 'tarball' | 'folder' | 'registry' | 'given';

/** The `agora-agents` dependency of a new agent: its npm spec, and where it points in words. */
export type FrameworkDependency = { spec: string; origin: DependencyOrigin; description: string };

const NON_PATH_SPEC = /^(link:|npm:|git\+|git:|https?:|github:|workspace:)|^[\^~<>=*]|^\d|^latest$|^next$/;

/** `file:<path relative to the agent>` (forward slashes, as npm writes them). */
function fileSpec(agentDir: string, path: string): string {
  const nearby = relative(agentDir, path).split(sep).join('/');
  return `file:${nearby.startsWith('.') ? nearby : `./${nearby}`}`;
}

function fromPath(agentDir: string, path: string, what: string): FrameworkDependency {
  if (!existsSync(path)) throw new AgoraError('BAD_REQUEST', `framework ${path}: no such file or folder`);
  const tarball = /\.(tgz|tar\.gz)$/.test(path);
  return {
    spec: fileSpec(agentDir, path),
    origin: tarball ? 'tarball' : 'folder',
    description: `${tarball ? 'the tarball' : 'the folder'} ${path}${what}`,
  };
}

/** The spec the project that installed this framework used for it, when the framework sits in its node_modules. */
function hostSpec(root: string): { host: string; spec: string } | undefined {
  const parts = root.split(sep);
  const index = parts.lastIndexOf('node_modules');
  if (index < 0) return undefined;
  const host = parts.slice(0, index).join(sep) || sep;
  try {
    const manifest = JSON.parse(readFileSync(join(host, 'package.json'), 'utf8')) as Record<
      string,
      Record<string, string> | undefined
    >;
    const spec =
      manifest.dependencies?.['agora-agents'] ??
      manifest.devDependencies?.['agora-agents'] ??
      manifest.optionalDependencies?.['agora-agents'];
    return spec ? { host, spec } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The dependency a new agent in `agentDir` gets: `framework` when given (a version, a URL, or a path to a folder or a
 * `npm pack` tarball, checked to exist); else this checkout by a relative `file:` path; else what the project that
 * installed this framework depends on (its tarball or folder, rewritten relative to the agent); else `^<version>`.
 * @example frameworkDependency('/work/my-agent', '/work/agora-agents', '0.1.0') // { spec: 'file:../agora-agents', origin: 'checkout', … }
 */
export function frameworkDependency(
  agentDir: string,
  root: string,
  version: string,
  framework?: string,
): FrameworkDependency {
  const dir = resolve(agentDir);
  if (framework) {
    if (NON_PATH_SPEC.test(framework))
      return { spec: framework, origin: 'given', description: 'as given by --framework' };
    return fromPath(dir, resolve(framework.replace(/^file:/, '')), ', as given by --framework');
  }
  const host = hostSpec(root);
  if (!host) {
    if (!root.split(sep).includes('node_modules')) {
      // The new agent imports the built framework (package.json `exports` point into dist/).
      if (!existsSync(join(root, 'dist', 'index.js')))
        throw new AgoraError(
          'BAD_REQUEST',
          `this checkout of agora-agents (${root}) is not built: run \`npm run build\` there first`,
        );
      return { spec: fileSpec(dir, root), origin: 'checkout', description: `this checkout of agora-agents (${root})` };
    }
    return { spec: `^${version}`, origin: 'registry', description: `agora-agents ${version} from the npm registry` };
  }
  if (host.spec.startsWith('file:')) {
    const path = resolve(host.host, host.spec.slice('file:'.length));
    if (existsSync(path)) return fromPath(dir, path, `, which ${host.host} installed this agora from`);
  }
  if (NON_PATH_SPEC.test(host.spec) && !/^(link:|workspace:)/.test(host.spec))
    return {
      spec: host.spec,
      origin: 'registry',
      description: `agora-agents ${host.spec}, as ${host.host} depends on it`,
    };
  return { spec: `^${version}`, origin: 'registry', description: `agora-agents ${version} from the npm registry` };
}
