import { AGENT_DEFAULTS } from '../agent/defaults.js';
import { folderArgument } from './_arguments.js';
import { openMemory } from './_memory.js';
import { defineCommand, printJson, requiredPositional, stringOption, UsageError } from './_command.js';
import { jsonOption, STORE_CONNECTION_OPTIONS, storeOf, storeOption, wantsJson } from './_options.js';

const PREFIX = 'suitability/';

type Verdict = { hash: string; suitable: boolean; reason?: string; judgedAt?: string };

/** `agora protocols verdicts|reset`: the suitability verdicts an agent's LLM gave on learned protocols, and forgetting one. */
export const command = defineCommand(
  {
    name: 'protocols',
    summary: "List the LLM's verdicts on learned protocols, or forget one so it is judged again",
    usage: 'agora protocols verdicts [dir] [--json] | reset <hash> [dir]',
  },
  {
    options: {
      json: jsonOption('Print the verdicts as JSON'),
      store: storeOption(
        'Where the agent keeps what it learned (as for agora serve)',
        'AGORA_STORE',
        AGENT_DEFAULTS.store,
      ),
      ...STORE_CONNECTION_OPTIONS,
    },
    details: [
      'A protocol a peer sends that the agent has no routine for is judged once by its LLM; a "no" is remembered and',
      'answered "Unsupported protocol" from then on. `reset <hash>` forgets the verdict (a running agent on the same',
      'folder or store judges it again at the next query, no restart needed). A hash prefix of 6 characters or more works.',
    ].join('\n'),
    async run(args) {
      const action = requiredPositional(args, 0, '<verdicts|reset>');
      if (action !== 'verdicts' && action !== 'reset')
        throw new UsageError(`expected verdicts or reset, got "${action}"`);
      const reference = action === 'reset' ? requiredPositional(args, 1, '<hash>').toLowerCase() : undefined;
      const dirArgument = args.positionals[action === 'reset' ? 2 : 1];
      if (args.positionals.length > (action === 'reset' ? 3 : 2))
        throw new UsageError(`unexpected arguments: ${args.positionals.slice(action === 'reset' ? 3 : 2).join(' ')}`);
      const dir = await folderArgument(dirArgument, '[dir]');
      const { memory, close } = await openMemory(dir, storeOf(args));
      try {
        const verdicts: Verdict[] = [];
        for (const key of await memory.keys(PREFIX)) {
          const value = await memory.get<{ suitable: boolean; reason?: string; judgedAt?: string }>(key);
          if (value && typeof value.suitable === 'boolean') verdicts.push({ hash: key.slice(PREFIX.length), ...value });
        }
        if (action === 'verdicts') {
          if (wantsJson(args)) printJson(verdicts);
          else if (verdicts.length === 0) process.stdout.write('no verdicts: no learned protocol was judged yet\n');
          else
            for (const verdict of verdicts)
              process.stdout.write(
                `${verdict.hash}  ${verdict.suitable ? 'suitable  ' : 'unsuitable'}  ${verdict.judgedAt ?? ''}\n`,
              );
          return 0;
        }
        if (reference!.length < 6) throw new UsageError('the hash must be 6 characters or more');
        const matches = verdicts.filter((verdict) => verdict.hash.toLowerCase().startsWith(reference!));
        if (matches.length === 0) {
          process.stderr.write(`agora protocols: no verdict on ${reference} in ${dir}\n`);
          return 1;
        }
        if (matches.length > 1)
          throw new UsageError(`${reference} matches ${matches.length} verdicts: give more of the hash`);
        const { hash, suitable } = matches[0]!;
        await memory.delete(`${PREFIX}${hash}`);
        process.stdout.write(
          `forgot the ${suitable ? 'suitable' : 'unsuitable'} verdict on ${hash}: the next query under it is judged again\n`,
        );
        return 0;
      } finally {
        await close();
      }
    },
  },
);
