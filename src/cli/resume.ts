import { requiredPositional } from './_command.js';
import { followChain, printHop } from './_chain-output.js';
import { chainOptions, hubCommand } from './_hub.js';

/** `agora resume <id>`: continues an unfinished chain from its last checkpoint, repeating no finished hop. */
export const command = hubCommand(
  {
    name: 'resume',
    summary: 'Continue an unfinished chain from its last checkpoint',
    usage: 'agora resume <id> [--hub <url>] [--max-hops N] [--force]',
  },
  {
    options: {
      ...chainOptions('Further hops at most (default: the chain’s own cap)'),
      force: {
        type: 'boolean',
        description: 'Take the chain over even when another live process holds it',
        default: false,
      },
    },
    json: 'Print the whole chain record as JSON',
    async run(args) {
      const id = requiredPositional(args, 0, '<id>');
      const force = args.values.force === true;
      return followChain(
        args,
        ({ resumeChain }, hub, { maxHops, hopTimeoutMs, roarSecret, allowPrivateAgents, tokenSource }) =>
          resumeChain(hub, id, {
            hopTimeoutMs,
            force,
            allowPrivateAgents,
            ...(tokenSource ? { tokenSource } : {}),
            onHop: printHop,
            ...(maxHops ? { maxHops } : {}),
            ...(roarSecret ? { roarSecret } : {}),
          }),
      );
    },
  },
);
