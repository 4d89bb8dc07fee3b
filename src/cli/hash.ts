import { readFile } from 'node:fs/promises';
import { hashText, parseDocument } from '../protocol/document.js';
import { fileArgument } from './_arguments.js';
import { defineCommand, printJson, requiredPositional, stringOption, UsageError } from './_command.js';
import { jsonOption, wantsJson } from './_options.js';

/** `agora hash <file>`: the SHA1 of a document's exact bytes. */
export const command = defineCommand(
  {
    name: 'hash',
    summary: 'Print the hash of a protocol document (SHA1 of its exact bytes)',
    usage: 'agora hash <file> [--encoding hex|base64] [--json]',
  },
  {
    options: {
      encoding: { type: 'string', value: 'hex|base64', description: 'Encoding of the digest', default: 'hex' },
      json: jsonOption('Print {file, hex, base64, name, valid} as JSON'),
    },
    async run(args) {
      const file = requiredPositional(args, 0, '<file>');
      const encoding = stringOption(args, 'encoding');
      if (encoding !== 'hex' && encoding !== 'base64')
        throw new UsageError(`--encoding must be hex or base64, got ${JSON.stringify(encoding)}`);
      const raw = await readFile(await fileArgument(file, '<file>'));
      if (wantsJson(args)) {
        let name: string | undefined;
        let error: string | undefined;
        try {
          name = parseDocument(raw, file).metadata.name;
        } catch (caught) {
          error = (caught as Error).message;
        }
        printJson({
          file,
          hex: hashText(raw, 'hex'),
          base64: hashText(raw, 'base64'),
          ...(name ? { name, valid: true } : { valid: false, error }),
        });
        return 0;
      }
      process.stdout.write(`${hashText(raw, encoding)}\n`);
      return 0;
    },
  },
);
