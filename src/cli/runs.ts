import { printJson, stringOption, type Command } from './_command.js';

/** `agora runs`: lists the hub's unfinished chains. */
export const command: Command = {
  name: 'runs',
  summary: "List the hub's unfinished chains (failed, interrupted, or stopped at the hop cap)",
  usage: 'agora runs [--hub <url>] [--all] [--json]',
  options: {
    hub: { type: 'string', value: '<url>', description: 'The hub', env: 'AGORA_HUB' },
    all: { type: 'boolean', description: 'Finished chains too', default: false },
    json: { type: 'boolean', description: 'Print JSON', default: false },
  },
  async run(args) {
    const { HubClient } = await import('../hub/client.js');
    const hub = new HubClient({ ...(stringOption(args, 'hub') ? { url: stringOption(args, 'hub')! } : {}) });
    const runs = await hub.runs(args.values.all === true);
    if (args.values.json === true) printJson(runs);
    else if (runs.length === 0) process.stdout.write('no unfinished chains\n');
    else {
      for (const run of runs) {
        const next = run.next ? ` next: ${run.next.target ?? 'route the goal'}` : '';
        process.stdout.write(`${run.id}  ${run.status}  ${run.hops.length} hop(s)  ${new Date(run.updatedAt).toISOString()}  ${JSON.stringify(run.goal.slice(0, 60))}${next}${run.error ? `  (${run.error.slice(0, 120)})` : ''}\n`);
      }
    }
    return 0;
  },
};
