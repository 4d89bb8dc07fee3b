// Internal: files and folders for every layer: atomic writes, module listing, folder watching, and importing
// TypeScript modules (routines, tools) with no build step.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, watch, type FSWatcher } from 'node:fs';
import { mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { AgoraError, describeError } from './errors.js';

/** Writes a file atomically: a temporary file in the same folder, then a rename. */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await writeFile(temporary, data);
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/** Throws AgoraError('INVALID_ARGUMENT') in plain words unless `path` is an existing folder (`what` names it). */
export async function requireFolder(path: string, what: string): Promise<void> {
  let isFolder: boolean;
  try {
    isFolder = (await stat(path)).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR')
      throw new AgoraError('INVALID_ARGUMENT', `${what} ${path}: no such folder`);
    throw new AgoraError('INVALID_ARGUMENT', `${what} ${path}: cannot be read (${code ?? describeError(error)})`, {
      cause: error,
    });
  }
  if (!isFolder) throw new AgoraError('INVALID_ARGUMENT', `${what} ${path}: is a file, not a folder`);
}

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

/** The framework's own entry: dist/index.js when built, src/index.ts when run from source (tests, tsx). */
function frameworkEntry(): string {
  for (const candidate of ['./index.js', './index.ts']) {
    const path = resolve(here, candidate);
    if (existsSync(path)) return path;
  }
  throw new Error(`agora-agents: cannot find the framework entry next to ${here}`);
}

/** Specifiers that always resolve to the running framework's copies, so agent folders need no node_modules. */
function frameworkSpecifier(specifier: string): string | undefined {
  if (specifier === 'agora-agents') return frameworkEntry();
  if (specifier.startsWith('agora-agents/')) {
    const subpath = specifier.slice('agora-agents/'.length);
    const map: Record<string, string> = { testing: 'testing/index', express: 'express', redis: 'conversation/redis' };
    const target = map[subpath];
    if (!target) return undefined;
    const entry = frameworkEntry();
    return resolve(dirname(entry), `${target}${extname(entry)}`);
  }
  if (specifier === 'zod' || specifier.startsWith('zod/')) {
    try {
      return require.resolve(specifier);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * Imports a TypeScript (or JavaScript) module with no build step: esbuild bundles the file and its relative
 * imports as ESM into `cacheDir`, with `agora-agents` and `zod` pointed at the running framework's copies,
 * so a routine loads the same way from a package, a bare folder or a fresh clone. Each content gets its own
 * file, so a changed file is imported afresh.
 */
export async function importTypeScript(file: string, cacheDir: string): Promise<Record<string, unknown>> {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: [file],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'silent',
    sourcemap: 'inline',
    plugins: [
      {
        name: 'agora-externals',
        setup(build) {
          build.onResolve({ filter: /^[^./]/ }, (args) => {
            if (args.kind === 'entry-point') return undefined;
            const framework = frameworkSpecifier(args.path);
            // Absolute paths work for Node's loader and for test runners alike.
            if (framework) return { path: framework, external: true };
            if (args.path.startsWith('node:')) return { path: args.path, external: true };
            return { path: args.path, external: true };
          });
        },
      },
    ],
  });
  const output = result.outputFiles[0];
  if (!output) throw new Error(`${file}: nothing was built`);
  const digest = createHash('sha1').update(output.contents).digest('hex').slice(0, 12);
  const target = join(cacheDir, `${basename(file).replace(/\.[^.]+$/, '')}-${digest}.mjs`);
  if (!existsSync(target)) await writeFileAtomic(target, output.contents);
  return (await import(/* @vite-ignore */ pathToFileURL(target).href)) as Record<string, unknown>;
}

/** Shortens esbuild's multi-line errors to one line. */
export function describeLoadError(error: unknown): string {
  const errors = (error as { errors?: { text: string; location?: { line: number; column: number } | null }[] }).errors;
  if (Array.isArray(errors) && errors.length) {
    const first = errors[0]!;
    return `${first.text}${first.location ? ` (line ${first.location.line}, column ${first.location.column})` : ''}`;
  }
  return describeError(error);
}

const MODULE_EXTENSIONS = new Set(['.ts', '.mts', '.js', '.mjs']);

/** Whether a file name is a loadable module (not a declaration, test or hidden file). */
export function isModuleFile(name: string): boolean {
  return (
    MODULE_EXTENSIONS.has(extname(name)) &&
    !name.endsWith('.d.ts') &&
    !/\.test\.[mc]?[jt]s$/.test(name) &&
    !name.startsWith('.') &&
    !name.startsWith('_')
  );
}

/** Lists the module files of a folder (empty when it does not exist). */
export async function listModules(directory: string): Promise<string[]> {
  try {
    const entries = await readdir(directory, { withFileTypes: true });
    return entries
      .filter((entry) => entry.isFile() && isModuleFile(entry.name))
      .map((entry) => join(directory, entry.name))
      .sort();
  } catch {
    return [];
  }
}

/**
 * Watches a folder and calls `onChange` (debounced) when anything in it changes, with the names of the entries that
 * changed, or `undefined` when they are not known (the platform did not say, or the watch was lost and taken up
 * again): then the whole folder must be looked at. Returns a function that stops watching. A missing folder is
 * watched from its parent until it appears.
 */
export function watchFolder(
  directory: string,
  onChange: (names: ReadonlySet<string> | undefined) => void,
  debounceMs = 80,
): () => void {
  let timer: NodeJS.Timeout | undefined;
  let watcher: FSWatcher | undefined;
  let parentWatcher: FSWatcher | undefined;
  let closed = false;
  // undefined: some change of unknown name is pending.
  let names: Set<string> | undefined = new Set();
  const fire = (name?: string | null) => {
    if (closed) return;
    if (typeof name === 'string' && name !== '') names?.add(name);
    else names = undefined;
    clearTimeout(timer);
    timer = setTimeout(() => {
      const changed = names;
      names = new Set();
      onChange(changed);
    }, debounceMs);
    timer.unref?.();
  };
  const attach = () => {
    if (closed || watcher) return;
    try {
      watcher = watch(directory, { persistent: false }, (_event, name) => fire(name));
      watcher.on('error', () => {
        watcher?.close();
        watcher = undefined;
        attachParent();
      });
      parentWatcher?.close();
      parentWatcher = undefined;
    } catch {
      attachParent();
    }
  };
  const attachParent = () => {
    if (closed || parentWatcher) return;
    try {
      parentWatcher = watch(dirname(directory), { persistent: false }, () => {
        if (existsSync(directory)) {
          attach();
          // The folder (re)appeared: what is in it is unknown.
          fire(null);
        }
      });
      parentWatcher.on('error', () => undefined);
    } catch {
      // The parent is gone too: nothing to watch.
    }
  };
  attach();
  return () => {
    closed = true;
    clearTimeout(timer);
    watcher?.close();
    parentWatcher?.close();
  };
}

/**
 * What a folder holds, as one string: each entry's name, size and modification time (hidden entries left out), or
 * `''` when it cannot be listed. Two equal signatures mean nothing in it changed that a reload would see, at the cost
 * of a listing and a stat per entry (no file is read).
 */
export async function folderSignature(directory: string): Promise<string> {
  let names: string[];
  try {
    names = (await readdir(directory)).filter((name) => !name.startsWith('.')).sort();
  } catch {
    return '';
  }
  const parts = await Promise.all(
    names.map(async (name) => {
      const info = await stat(join(directory, name)).catch(() => undefined);
      return info ? `${name}\0${info.size}\0${info.mtimeMs}` : name;
    }),
  );
  return parts.join('\n');
}

/** Whether a change concerns source files (a module, or a file a module may import): an editor's swap file does not. */
export function touchesSources(names: ReadonlySet<string> | undefined): boolean {
  if (names === undefined) return true;
  for (const name of names)
    if (!name.startsWith('.') && (MODULE_EXTENSIONS.has(extname(name)) || name.endsWith('.json'))) return true;
  return false;
}

/** Whether a path exists (a file that failed to load is still there: logged as such, not as removed). */
export function fileExists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
