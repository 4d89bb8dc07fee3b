import { numberOption, requiredPositional, stringOption, type Command } from './_command.js';
import { printHop, printOutcome } from './_chain-output.js';

/** `agora resume <id>`: continues an unfinished chain from its last checkpoint, repeating no finished hop. */
export const command: Command = {
  name: 'resume',
  summary: 'Continue an unfinished chain from its last checkpoint',
  usage: 'agora resume <id> [--hub <url>] [--max-hops N] [--force]',
  options: {
    hub: { type: 'string', value: '<url>', description: 'The hub', env: 'AGORA_HUB' },
    'max-hops': { type: 'string', value: '<n>', description: 'Further hops at most (default: the chain’s own cap)' },
    timeout: { type: 'string', value: '<seconds>', description: 'Time each agent has to answer', env: 'AGORA_TIMEOUT', default: '60' },
    force: { type: 'boolean', description: 'Take the chain over even when another live process holds it', default: false },
    json: { type: 'boolean', description: 'Print the whole chain record as JSON', default: false },
  },
  async run(args) {
    const id = requiredPositional(args, 0, '<id>');
    const { HubClient } = await import('../hub/client.js');
    const { resumeChain } = await import('../hub/chains.js');
    const hub = new HubClient({ ...(stringOption(args, 'hub') ? { url: stringOption(args, 'hub')! } : {}) });
    const maxHops = numberOption(args, 'max-hops', { min: 1, integer: true });
    const run = await resumeChain(hub, id, {
      hopTimeoutMs: (numberOption(args, 'timeout', { min: 0.001 }) ?? 60) * 1000,
      force: args.values.force === true,
      onHop: printHop,
      ...(maxHops ? { maxHops } : {}),
    });
    return printOutcome(run, args.values.json === true);
  },
};
