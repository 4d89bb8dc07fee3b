import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { describeLoadError, fileExists, importTypeScript, listModules } from '../_files.js';
import type { Logger } from '../log.js';
import { toRoutine, type Routine } from './define.js';

/** A routine loaded from a file, with where it came from. */
export type LoadedRoutine = { name: string; file: string; routine: Routine; digest: string };

/**
 * Loads `routines/<name>.ts` files: name → routine. Files that fail to load are logged and skipped; given what was
 * loaded before (`previous`: a reload), each file added, changed or removed since is logged, one line each.
 */
export async function loadRoutineFolder(
  directory: string,
  cacheDir: string,
  logger: Logger,
  previous?: Map<string, LoadedRoutine>,
): Promise<Map<string, LoadedRoutine>> {
  const routines = new Map<string, LoadedRoutine>();
  for (const file of await listModules(directory)) {
    const name = basename(file).replace(/\.[^.]+$/, '');
    try {
      const source = await readFile(file);
      const digest = createHash('sha1').update(source).digest('hex');
      const old = previous?.get(name);
      if (old && old.digest === digest && old.file === file) {
        routines.set(name, old);
        continue;
      }
      const module = await importTypeScript(file, cacheDir);
      const routine = toRoutine(module.default, file);
      routines.set(name, { name, file, routine, digest });
      if (previous) logger.info(`routine ${name} ${old ? 'changed' : 'added'} (${file})`);
    } catch (error) {
      logger.error(`routine ${file} not loaded: ${describeLoadError(error)}`);
    }
  }
  for (const [name, old] of previous ?? [])
    if (!routines.has(name) && !(await fileExists(old.file))) logger.info(`routine ${name} removed (${old.file})`);
  return routines;
}
