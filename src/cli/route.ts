import { printJson, requiredPositional, stringOption, type Command } from './_command.js';

/** `agora route "<goal>"`: asks the hub which agent a goal goes to, and why. */
export const command: Command = {
  name: 'route',
  summary: 'Ask the hub which agent a goal goes to, and why',
  usage: 'agora route "<goal>" [--hub <url>] [--handoff <agent>]',
  options: {
    hub: { type: 'string', value: '<url>', description: 'The hub', env: 'AGORA_HUB' },
    handoff: { type: 'string', value: '<agent>', description: 'An explicit next agent (name, id or URL): always wins' },
    json: { type: 'boolean', description: 'Print the decision as JSON', default: false },
  },
  async run(args) {
    const goal = requiredPositional(args, 0, '"<goal>"');
    const { HubClient } = await import('../hub/client.js');
    const hub = new HubClient({ ...(stringOption(args, 'hub') ? { url: stringOption(args, 'hub')! } : {}) });
    const decision = await hub.route(goal, stringOption(args, 'handoff'));
    if (args.values.json === true) printJson(decision);
    else {
      process.stdout.write(`${decision.agent.name} ${decision.agent.url}${decision.protocol ? ` (protocol: ${decision.protocol.name})` : ''}\n`);
      process.stdout.write(`by ${decision.by}: ${decision.reason}\n`);
    }
    return 0;
  },
};
