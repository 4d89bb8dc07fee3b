import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { AgoraError } from '../errors.js';
import { parseDocument } from '../protocol/document.js';
import { printJson, type Command } from './_command.js';

/** `agora validate [dir]`: every document of `<dir>/protocols` with its hash, or why it is invalid. */
export const command: Command = {
  name: 'validate',
  summary: 'Check the protocol documents of an agent folder',
  usage: 'agora validate [dir] [--json]',
  options: { json: { type: 'boolean', description: 'Print the results as JSON' } },
  details: 'Exits 1 when any document is invalid.',
  async run(args) {
    const directory = join(resolve(args.positionals[0] ?? '.'), 'protocols');
    let names: string[];
    try {
      names = (await readdir(directory)).filter((name) => name.endsWith('.md')).sort();
    } catch {
      throw new AgoraError('NOT_FOUND', `no protocols folder at ${directory}`);
    }
    const results = await Promise.all(
      names.map(async (name) => {
        const file = join(directory, name);
        try {
          const document = parseDocument(await readFile(file), name);
          return { file: name, valid: true as const, hash: document.hash, name: document.metadata.name, multiround: document.metadata.multiround };
        } catch (error) {
          return { file: name, valid: false as const, error: (error as Error).message.replace(`${name}: `, '') };
        }
      }),
    );
    if (args.values.json) printJson(results);
    else {
      if (!results.length) process.stdout.write(`no documents in ${directory}\n`);
      for (const result of results) {
        process.stdout.write(result.valid ? `ok       ${result.hash}  ${result.file}  (${result.name})\n` : `invalid  ${result.file}: ${result.error}\n`);
      }
    }
    return results.every((result) => result.valid) ? 0 : 1;
  },
};
