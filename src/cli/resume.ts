import { requiredPositional } from './_command.js';
import { printHop, printOutcome } from './_chain-output.js';
import { chainLimits, chainOptions, hubClient, hubCommand } from './_hub.js';
import { wantsJson } from './_options.js';

/** `agora resume <id>`: continues an unfinished chain from its last checkpoint, repeating no finished hop. */
export const command = hubCommand({
  name: 'resume',
  summary: 'Continue an unfinished chain from its last checkpoint',
  usage: 'agora resume <id> [--hub <url>] [--max-hops N] [--force]',
  options: {
    ...chainOptions('Further hops at most (default: the chain’s own cap)'),
    force: { type: 'boolean', description: 'Take the chain over even when another live process holds it', default: false },
  },
  json: 'Print the whole chain record as JSON',
  async run(args) {
    const id = requiredPositional(args, 0, '<id>');
    const hub = await hubClient(args);
    const { resumeChain } = await import('../hub/chains.js');
    const { maxHops, hopTimeoutMs } = chainLimits(args);
    const run = await resumeChain(hub, id, {
      hopTimeoutMs,
      force: args.values.force === true,
      onHop: printHop,
      ...(maxHops ? { maxHops } : {}),
    });
    return printOutcome(run, wantsJson(args));
  },
});
