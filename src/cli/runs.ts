import { plural } from '../_plural.js';
import { printJson } from './_command.js';
import { hubClient, hubCommand } from './_hub.js';
import { wantsJson } from './_options.js';

/** `agora runs`: lists the hub's unfinished chains. */
export const command = hubCommand(
  {
    name: 'runs',
    summary: "List the hub's unfinished chains (failed, interrupted, or stopped at the hop cap)",
    usage: 'agora runs [--hub <url>] [--all] [--json]',
  },
  {
    options: { all: { type: 'boolean', description: 'Finished chains too', default: false } },
    json: 'Print JSON',
    async run(args) {
      const hub = await hubClient(args);
      const runs = await hub.runs(args.values.all === true);
      if (wantsJson(args)) printJson(runs);
      else if (runs.length === 0) process.stdout.write('no unfinished chains\n');
      else {
        for (const run of runs) {
          const next = run.next ? ` next: ${run.next.target ?? 'route the goal'}` : '';
          process.stdout.write(
            `${run.id}  ${run.status}  ${plural(run.hops.filter((hop) => hop.ok).length, 'hop')}  ${new Date(run.updatedAt).toISOString()}  ${JSON.stringify(run.goal.slice(0, 60))}${next}${run.error ? `  (${run.error.slice(0, 120)})` : ''}\n`,
          );
        }
      }
      return 0;
    },
  },
);
