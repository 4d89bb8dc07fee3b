import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Logger } from '../log.js';
import { describeLoadError, fileExists, importTypeScript, listModules } from '../_files.js';
import { isTool, type Tool } from './define.js';

/** The tools of one file of `tools/`, with its digest. */
export type LoadedTool = { file: string; digest: string; tools: Tool[] };

/**
 * Loads `tools/*.ts` (each file's default export: one tool, or an array of tools); bad files are logged and skipped.
 * Given what was loaded before (`previous`: a reload), each file added, changed or removed since is logged.
 */
export async function loadToolFolder(
  directory: string,
  cacheDir: string,
  logger: Logger,
  previous?: Map<string, LoadedTool>,
): Promise<Map<string, LoadedTool>> {
  const loaded = new Map<string, LoadedTool>();
  for (const file of await listModules(directory)) {
    try {
      const digest = createHash('sha1')
        .update(await readFile(file))
        .digest('hex');
      const old = previous?.get(file);
      if (old && old.digest === digest) {
        loaded.set(file, old);
        continue;
      }
      const module = await importTypeScript(file, cacheDir);
      const exported = module.default;
      const tools = (Array.isArray(exported) ? exported : [exported]).filter(isTool);
      if (!tools.length) throw new Error('the default export must be defineTool({ name, description, input, run })');
      loaded.set(file, { file, digest, tools });
      if (previous)
        logger.info(`tools ${old ? 'changed' : 'added'}: ${tools.map((tool) => tool.name).join(', ')} (${file})`);
    } catch (error) {
      logger.error(`tool ${file} not loaded: ${describeLoadError(error)}`);
    }
  }
  for (const [file, old] of previous ?? [])
    if (!loaded.has(file) && !(await fileExists(file)))
      logger.info(`tools removed: ${old.tools.map((tool) => tool.name).join(', ')} (${file})`);
  return loaded;
}
