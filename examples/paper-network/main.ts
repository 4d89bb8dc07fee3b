// `npm run demo:network`: the paper's network on one machine. 85 user agents and 15 service agents, three hubs
// whose catalogues synchronise, 1,000 scripted actions played twice (natural language only, then Agora), every
// answer checked against the services' hidden tables; writes the figure (cost per query, moving average over 100)
// and the table, and exits 1 when an answer is wrong.
//
// `--seed N` (printed; the same seed gives the same scenario, figure and table), `--users`, `--services`,
// `--actions`, `--latency-ms` (each LLM call's time, default 0), `--window` (default 100), `--sync-every` (actions
// between two syncs of the hubs, default 25), `--tail` (the actions the cost breakdown covers, default 300),
// `--hub-port` (the first hub's port, whose dashboard shows the curves live; default any free one), `--out DIR`
// (default paper-network-out).
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { quietLogger } from '../_shared.js';
import { runDemo } from './demo.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '43' },
    users: { type: 'string', default: '85' },
    services: { type: 'string', default: '15' },
    actions: { type: 'string', default: '1000' },
    'latency-ms': { type: 'string', default: '0' },
    window: { type: 'string', default: '100' },
    'sync-every': { type: 'string', default: '25' },
    tail: { type: 'string', default: '300' },
    'hub-port': { type: 'string', default: '0' },
    out: { type: 'string', default: 'paper-network-out' },
  },
});
const settings = {
  seed: Number(values.seed),
  users: Number(values.users),
  services: Number(values.services),
  actions: Number(values.actions),
  latencyMs: Number(values['latency-ms']),
  window: Number(values.window),
  syncEvery: Number(values['sync-every']),
  tail: Number(values.tail),
  hubPort: Number(values['hub-port']),
};
for (const [name, value] of Object.entries(settings))
  if (!Number.isInteger(value) || value < 0) {
    console.error(`--${name}: a whole number, not ${value}`);
    process.exit(2);
  }

console.log(
  `The paper's network: seed ${settings.seed}, ${settings.users} users, ${settings.services} services, ${settings.actions} actions.`,
);
const report = await runDemo({
  ...settings,
  logger: quietLogger,
  progress: (line) => console.error(line),
  onDashboard: (url) => console.log(`Live cost per query on the first hub's dashboard: ${url}#cost`),
});
const out = resolve(values.out);
await mkdir(out, { recursive: true });
await writeFile(join(out, 'cost-per-query.svg'), report.svg);
await writeFile(join(out, 'table.md'), `${report.markdown}\n`);
// The demo's own records, one per action and run, for anyone who wants to cut the costs another way.
await writeFile(join(out, 'outcomes.json'), JSON.stringify(report.runs, null, 1));
console.log(`\n${report.markdown}\n\nWrote ${join(out, 'cost-per-query.svg')} and ${join(out, 'table.md')}.`);
for (const mismatch of report.mismatches) console.error(`wrong: ${mismatch}`);
process.exitCode = report.mismatches.length ? 1 : 0;
