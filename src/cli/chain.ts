import { numberOption, requiredPositional, stringOption, type Command } from './_command.js';
import { printHop, printOutcome } from './_chain-output.js';

/** `agora chain "<goal>"`: routes a goal and follows the handoffs agents name, with a checkpoint at the hub after each hop. */
export const command: Command = {
  name: 'chain',
  summary: 'Route a goal and follow the handoffs agents name, checkpointing each hop at the hub',
  usage: 'agora chain "<goal>" [--hub <url>] [--max-hops 10]',
  options: {
    hub: { type: 'string', value: '<url>', description: 'The hub', env: 'AGORA_HUB' },
    'max-hops': { type: 'string', value: '<n>', description: 'Hops at most', default: '10' },
    timeout: { type: 'string', value: '<seconds>', description: 'Time each agent has to answer', env: 'AGORA_TIMEOUT', default: '60' },
    json: { type: 'boolean', description: 'Print the whole chain record as JSON', default: false },
  },
  details: 'Exit codes: 0 the chain finished · 1 it failed or hit the hop cap (resume it with `agora resume <id>`) · 2 usage error.',
  async run(args) {
    const goal = requiredPositional(args, 0, '"<goal>"');
    const { HubClient } = await import('../hub/client.js');
    const { runChain } = await import('../hub/chains.js');
    const hub = new HubClient({ ...(stringOption(args, 'hub') ? { url: stringOption(args, 'hub')! } : {}) });
    const run = await runChain(hub, goal, {
      maxHops: numberOption(args, 'max-hops', { min: 1, integer: true }) ?? 10,
      hopTimeoutMs: (numberOption(args, 'timeout', { min: 0.001 }) ?? 60) * 1000,
      onHop: (hop, current) => {
        if (hop === current.hops[0]) process.stderr.write(`chain ${current.id}\n`);
        printHop(hop, current);
      },
    });
    return printOutcome(run, args.values.json === true);
  },
};
