import { requiredPositional } from './_command.js';
import { followChain, printHop } from './_chain-output.js';
import { chainOptions, hubCommand } from './_hub.js';

/** `agora chain "<goal>"`: routes a goal and follows the handoffs agents name, with a checkpoint at the hub after each hop. */
export const command = hubCommand(
  {
    name: 'chain',
    summary: 'Route a goal and follow the handoffs agents name, checkpointing each hop at the hub',
    usage: 'agora chain "<goal>" [--hub <url>] [--max-hops 10]',
  },
  {
    options: chainOptions('Hops at most', 10),
    json: 'Print the whole chain record as JSON',
    details: 'Exit codes: 0 the chain finished · 1 failed or capped (its last line says what to do) · 2 usage error.',
    async run(args) {
      const goal = requiredPositional(args, 0, '"<goal>"');
      return followChain(
        args,
        ({ runChain }, hub, { maxHops, hopTimeoutMs, roarSecret, allowPrivateAgents, tokenSource }) =>
          runChain(hub, goal, {
            maxHops: maxHops ?? 10,
            hopTimeoutMs,
            allowPrivateAgents,
            ...(tokenSource ? { tokenSource } : {}),
            ...(roarSecret ? { roarSecret } : {}),
            onHop: (hop, current) => {
              if (hop === current.hops[0]) process.stderr.write(`chain ${current.id}\n`);
              printHop(hop, current);
            },
          }),
      );
    },
  },
);
