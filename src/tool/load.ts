import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Logger } from '../log.js';
import { describeLoadError, importTypeScript, listModules } from '../_files.js';
import { isTool, type Tool } from './define.js';

type LoadedTool = { file: string; digest: string; tools: Tool[] };

/** Loads `tools/*.ts` (each file's default export: one tool, or an array of tools); bad files are logged and skipped. */
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
    } catch (error) {
      logger.error(`tool ${file} not loaded: ${describeLoadError(error)}`);
    }
  }
  return loaded;
}
