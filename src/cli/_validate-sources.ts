// Internal: what `agora validate` says of an agent folder's routines/ and tools/: each file loads, type-checks in
// strict mode as `agora serve` checks it, and each routine has a protocol of its name.
import { join, relative } from 'node:path';
import { listModules } from '../_files.js';
import { RoutineTypeChecker } from '../generation/checks/typecheck.js';
import { memoryLogger } from '../log.js';
import { loadRoutineFolder } from '../routine/load.js';
import { loadToolFolder } from '../tool/load.js';

/** The verdict on one hand-written file: its errors (load, types; each naming the file) and warnings. */
export type SourceResult = { file: string; valid: boolean; errors: string[]; warnings: string[] };

/** Loads and type-checks `<dir>/routines/*.ts` and `<dir>/tools/*.ts`; `protocols` are the documents' names. */
export async function validateSources(dir: string, protocols: ReadonlySet<string>): Promise<SourceResult[]> {
  const files = [...(await listModules(join(dir, 'routines'))), ...(await listModules(join(dir, 'tools')))];
  if (!files.length) return [];
  const results = new Map<string, SourceResult>(
    files.map((file) => [file, { file: relative(dir, file), valid: true, errors: [], warnings: [] }]),
  );
  const logger = memoryLogger();
  const cacheDir = join(dir, '.agora', 'cache');
  const [routines] = await Promise.all([
    loadRoutineFolder(join(dir, 'routines'), cacheDir, logger),
    loadToolFolder(join(dir, 'tools'), cacheDir, logger),
  ]);
  // A file that did not load is named in its logged line: "routine <file> not loaded: …".
  for (const line of logger.lines)
    for (const [file, result] of results)
      if (line.includes(` ${file} not loaded: `))
        result.errors.push(`${result.file}: ${line.slice(line.indexOf('not loaded: '))}`);
  for (const { name, file } of routines.values())
    if (!protocols.has(name))
      results
        .get(file)
        ?.warnings.push(`matches no protocol: a routine answers protocols/${name}.md, and there is none`);
  const checker = new RoutineTypeChecker();
  try {
    const { errors } = await checker.checkFiles(files, dir);
    for (const error of errors) {
      const result = [...results.values()].find((candidate) => error.startsWith(`${candidate.file}:`));
      result?.errors.push(error);
    }
  } finally {
    await checker.close();
  }
  for (const result of results.values()) result.valid = result.errors.length === 0;
  return [...results.values()];
}
