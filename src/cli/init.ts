import { resolve } from 'node:path';
import { isAgoraError } from '../errors.js';
import { initAgent } from '../init.js';
import { defineCommand, displayPath, printJson, requiredPositional, stringOption, UsageError } from './_command.js';
import { jsonOption, wantsJson } from './_options.js';

/** `agora init <dir>`: scaffolds a new agent from the framework's root agent. */
export const command = defineCommand(
  {
    name: 'init',
    summary: 'Scaffold a new agent folder',
    usage: 'agora init <dir> [--framework <spec>] [--force] [--json]',
  },
  {
    options: {
      framework: {
        type: 'string',
        value: '<spec>',
        description:
          'How the agent depends on agora-agents: a version, a folder, or an `npm pack` tarball (default: this checkout, else what this agora was installed from)',
      },
      force: { type: 'boolean', description: 'Write into a folder that is not empty' },
      json: jsonOption('Print the files written as JSON'),
    },
    details: 'Then: cd <dir> && npm install && npm start (serves it), npm test (runs its test against a fake LLM).',
    async run(args) {
      const directory = resolve(requiredPositional(args, 0, '<dir>'));
      const json = wantsJson(args);
      const framework = stringOption(args, 'framework');
      let dependencyLine = '';
      const files = await initAgent(directory, {
        ...(framework ? { framework } : {}),
        force: args.values.force === true,
        onDependency: (dependency) => {
          dependencyLine = `agora-agents: "${dependency.spec}" (${dependency.description}); to change it, edit package.json's dependencies or run agora init again with --framework <version|folder|tarball>\n`;
        },
        ...(json ? {} : { onFile: (path: string) => process.stdout.write(`  wrote ${path}\n`) }),
      }).catch((error: unknown) => {
        // The library names its `framework` option; here the user typed `--framework`: a usage error.
        if (isAgoraError(error) && error.message.startsWith('framework ')) throw new UsageError(`--${error.message}`);
        throw error;
      });
      if (json) {
        printJson({ dir: directory, files });
        return 0;
      }
      process.stdout.write(
        `\n${dependencyLine}\nCreated an agent in ${directory} (${files.length} files). Next:\n\n  cd ${displayPath(directory)}\n  npm install && npm start\n  npm test\n  npm run typecheck\n`,
      );
      return 0;
    },
  },
);
