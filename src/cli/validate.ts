import { readdir, readFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { AgoraError } from '../errors.js';
import { parseDocument } from '../protocol/document.js';
import { pathKind } from './_arguments.js';
import { defineCommand, displayPath, printJson, UsageError } from './_command.js';
import { jsonOption, wantsJson } from './_options.js';
import { validateSources } from './_validate-sources.js';

/** The documents to check: the one file named, or every `.md` of `<dir>/protocols`. */
async function documentsOf(target: string): Promise<{ directory: string; names: string[]; agent?: string }> {
  const path = resolve(target);
  const kind = await pathKind(path);
  if (kind === 'missing') throw new UsageError(`[dir|file] ${displayPath(path)}: no such file or folder`);
  if (kind === 'file') return { directory: dirname(path), names: [basename(path)] };
  const directory = join(path, 'protocols');
  try {
    const names = (await readdir(directory)).filter((name) => name.endsWith('.md')).sort();
    return { directory, names, agent: path };
  } catch {
    throw new AgoraError('NOT_FOUND', `no protocols folder at ${directory}`);
  }
}

/** `agora validate [dir|file]`: every document of `<dir>/protocols` (or the one file given) with its hash, or why it is invalid. */
export const command = defineCommand(
  {
    name: 'validate',
    summary: 'Check an agent folder (protocols, routines, tools), or one document',
    usage: 'agora validate [dir|file] [--json]',
  },
  {
    options: { json: jsonOption('Print the results as JSON') },
    details:
      'A folder: every .md file of its protocols/ folder, and each file of routines/ and tools/ loaded and type-checked\n' +
      '(strict), a routine with no protocol of its name named. A file: that document. Exits 1 when anything is invalid.',
    async run(args) {
      if (args.positionals.length > 1)
        throw new UsageError(`too many arguments: validate takes one folder or file, got ${args.positionals.length}`);
      const { directory, names, agent } = await documentsOf(args.positionals[0] ?? '.');
      const results = await Promise.all(
        names.map(async (name) => {
          const file = join(directory, name);
          try {
            const document = parseDocument(await readFile(file), name);
            return {
              file: name,
              valid: true as const,
              hash: document.hash,
              name: document.metadata.name,
              multiround: document.metadata.multiround,
            };
          } catch (error) {
            return { file: name, valid: false as const, error: (error as Error).message.replace(`${name}: `, '') };
          }
        }),
      );
      const protocols = new Set(results.map((result) => result.file.replace(/\.md$/, '')));
      const sources = agent ? await validateSources(agent, protocols) : [];
      if (wantsJson(args)) printJson([...results, ...sources]);
      else {
        if (!results.length) process.stdout.write(`no documents in ${directory}\n`);
        for (const result of results) {
          process.stdout.write(
            result.valid
              ? `ok       ${result.hash}  ${result.file}  (${result.name})\n`
              : `invalid  ${result.file}: ${result.error}\n`,
          );
        }
        for (const source of sources) {
          const lines = [
            ...source.errors.map((error) => `invalid  ${error}`),
            ...source.warnings.map((warning) => `warning  ${source.file}: ${warning}`),
          ];
          process.stdout.write(`${lines.length ? lines.join('\n') : `ok       ${source.file}`}\n`);
        }
      }
      return [...results, ...sources].every((result) => result.valid) ? 0 : 1;
    },
  },
);
