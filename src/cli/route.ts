import { printJson, requiredPositional, stringOption } from './_command.js';
import { hubClient, hubCommand } from './_hub.js';
import { wantsJson } from './_options.js';

/** `agora route "<goal>"`: asks the hub which agent a goal goes to, and why. */
export const command = hubCommand(
  {
    name: 'route',
    summary: 'Ask the hub which agent a goal goes to, and why',
    usage: 'agora route "<goal>" [--hub <url>] [--handoff <agent>]',
  },
  {
    options: {
      handoff: {
        type: 'string',
        value: '<agent>',
        description: 'An explicit next agent (name, id or URL): always wins',
      },
    },
    json: 'Print the decision as JSON',
    async run(args) {
      const goal = requiredPositional(args, 0, '"<goal>"');
      const hub = await hubClient(args);
      const decision = await hub.route(goal, stringOption(args, 'handoff'));
      if (wantsJson(args)) printJson(decision);
      else {
        process.stdout.write(
          `${decision.agent.name} ${decision.agent.url}${decision.protocol ? ` (protocol: ${decision.protocol.name})` : ''}\n`,
        );
        process.stdout.write(`by ${decision.by}: ${decision.reason}\n`);
      }
      return 0;
    },
  },
);
