// The demo as a function: the scenario from its seed, the same actions played twice on fresh networks (natural
// language only, then Agora), and the report: the table, the figure, the steady-state ratio, every wrong answer.
import type { Logger } from 'agora-agents';
import type { UsageSeries } from 'agora-agents/hub';
import { costBreakdown } from './breakdown.js';
import { costFigure, type Series } from './figure.js';
import { MODEL, PRICES, startNetworkLlm, type Ledger } from './llm.js';
import { runNetwork, startHubs, type Outcome, type Path, type RunSummary } from './network.js';
import { script } from './scenario.js';

/** What the demo is asked to play. */
export type DemoOptions = {
  seed: number;
  users: number;
  services: number;
  actions: number;
  /** Milliseconds each LLM call takes (0: as fast as the fake answers). */
  latencyMs: number;
  /** The moving average's window, and the steady state's length (the last `window` actions). */
  window: number;
  syncEvery: number;
  /** How many of the last actions the cost breakdown covers (default 300). */
  tail?: number;
  /** The first hub's port, whose dashboard draws the curves live (0: any free port). */
  hubPort?: number;
  /** Called once the hubs are up, with the first hub's dashboard address. */
  onDashboard?: (url: string) => void;
  routineThresholds?: { service: number; user: number };
  logger: Logger;
  progress?: (line: string) => void;
};

/** The demo's results. */
export type DemoReport = {
  markdown: string;
  svg: string;
  mismatches: string[];
  ratio: { total: number; steady: number };
  runs: { nl: RunSummary; agora: RunSummary };
};

const PATHS: Path[] = ['natural language', 'negotiation', 'protocol with LLM', 'protocol with routines'];
const sum = (outcomes: Outcome[], pick: (outcome: Outcome) => number) =>
  outcomes.reduce((total, outcome) => total + pick(outcome), 0);
const number = (value: number, digits = 0) =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const usd = (value: number) => `$${value < 0.01 ? value.toFixed(5) : value.toFixed(4)}`;

function row(cells: (string | number)[]): string {
  return `| ${cells.join(' | ')} |`;
}

/** Plays the scenario twice and writes the report. */
export async function runDemo(options: DemoOptions): Promise<DemoReport> {
  const world = script(options);
  const progress = options.progress ?? (() => {});
  const runs = {} as { nl: RunSummary; agora: RunSummary };
  const ledgers = {} as { nl: Ledger; agora: Ledger };
  // One set of hubs for the demo: each run registers its own services, and both report to the first hub.
  const hubs = await startHubs(options.logger, options.hubPort ?? 0);
  let reported: UsageSeries[] = [];
  options.onDashboard?.(`${hubs[0]!.url}/dashboard/`);
  try {
    for (const mode of ['nl', 'agora'] as const) {
      // Each run has its own fake API and ledger, so neither can bill the other.
      const llm = await startNetworkLlm({ latencyMs: options.latencyMs });
      progress(`${mode === 'nl' ? 'natural language only' : 'Agora'}: ${world.actions.length} actions`);
      try {
        runs[mode] = await runNetwork({
          agora: mode === 'agora',
          hubs,
          seed: options.seed,
          services: world.services,
          users: world.users,
          actions: world.actions,
          llm,
          logger: options.logger,
          syncEvery: options.syncEvery,
          ...(options.routineThresholds ? { routineThresholds: options.routineThresholds } : {}),
          onOutcome: (index) => {
            if ((index + 1) % 100 === 0) progress(`  ${index + 1}/${world.actions.length}`);
          },
        });
        // What the fake API reported to the SDKs is what the ledger billed.
        const totals = llm.fake.totals();
        const billed = llm.ledger.since(0);
        if (
          totals.calls !== billed.calls ||
          totals.inputTokens !== billed.input ||
          totals.outputTokens !== billed.output
        )
          throw new Error(`the fake API reported ${JSON.stringify(totals)}, the ledger ${JSON.stringify(billed)}`);
        ledgers[mode] = llm.ledger;
      } finally {
        await llm.close();
      }
    }
    reported = hubs[0]!.hub.usage.series();
  } finally {
    for (const hub of hubs) await hub.close();
  }

  const { nl, agora } = runs;
  const window = Math.min(options.window, world.actions.length);
  const dollars = { nl: sum(nl.outcomes, (o) => o.dollars), agora: sum(agora.outcomes, (o) => o.dollars) };
  const steady = {
    nl: sum(nl.outcomes.slice(-window), (o) => o.dollars) / window,
    agora: sum(agora.outcomes.slice(-window), (o) => o.dollars) / window,
  };
  const ratio = { total: dollars.nl / dollars.agora, steady: steady.nl / Math.max(steady.agora, Number.EPSILON) };
  const mismatches = [...nl.outcomes, ...agora.outcomes].flatMap((outcome) => (outcome.wrong ? [outcome.wrong] : []));
  const agents = `${world.users} user agents, ${world.services.length} service agents`;

  const series: Series[] = [
    { label: 'natural language only', color: '#c0392b', values: nl.outcomes.map((o) => o.dollars) },
    { label: 'Agora', color: '#2471a3', values: agora.outcomes.map((o) => o.dollars) },
  ];
  const svg = costFigure(series, {
    title: `${agents}, 3 hubs, ${world.actions.length} actions (seed ${options.seed}): cost per query`,
    window,
  });

  const byPath = (outcomes: Outcome[], path: Path) => outcomes.filter((outcome) => outcome.path === path);
  const perRun = (label: string, run: RunSummary) => {
    const tokens = sum(run.outcomes, (o) => o.input + o.output);
    const calls = sum(run.outcomes, (o) => o.calls);
    return row([
      label,
      ...PATHS.map((path) => byPath(run.outcomes, path).length),
      number(calls),
      number(tokens),
      usd(sum(run.outcomes, (o) => o.dollars)),
      usd(sum(run.outcomes.slice(-window), (o) => o.dollars) / window),
      run.negotiated,
      `${run.routines.services} + ${run.routines.users}`,
      number(run.seconds, 1),
      number(run.outcomes.length / run.seconds, 1),
    ]);
  };
  const kinds = (ledger: Ledger) => {
    const counts = new Map<string, { calls: number; tokens: number }>();
    for (const bill of ledger.bills) {
      const entry = counts.get(bill.kind) ?? { calls: 0, tokens: 0 };
      entry.calls += 1;
      entry.tokens += bill.input + bill.output;
      counts.set(bill.kind, entry);
    }
    return [...counts].map(([kind, entry]) => `${kind} ${entry.calls} (${number(entry.tokens)} tokens)`).join(', ');
  };
  const writing = agora.outcomes.filter((outcome) => outcome.wroteRoutine);
  const agoraCalls = sum(agora.outcomes, (o) => o.calls);
  const nlCalls = sum(nl.outcomes, (o) => o.calls);
  const markdown = [
    `### ${agents}, 3 hubs, ${number(world.actions.length)} actions, seed ${options.seed}`,
    '',
    row([
      'run',
      ...PATHS,
      'LLM calls',
      'tokens',
      'dollars',
      `per query, last ${window}`,
      'negotiated',
      'routines (services + users)',
      'wall time (s)',
      'queries/s',
    ]),
    row(Array(14).fill('---')),
    perRun('natural language only', nl),
    perRun('Agora', agora),
    '',
    `- steady state (last ${window} actions): **${number(ratio.steady, 1)}×** cheaper with Agora (${usd(steady.nl)} against ${usd(steady.agora)} per query); over the whole run ${number(ratio.total, 1)}× (${usd(dollars.nl)} against ${usd(dollars.agora)})`,
    `- prices: ${MODEL}, $${PRICES.input} per million input tokens, $${PRICES.output} per million output tokens (taken ${PRICES.taken}); tokens counted with gpt-tokenizer's ${MODEL} encoding`,
    `- LLM calls by kind, Agora: ${kinds(ledgers.agora)}`,
    `- LLM calls by kind, natural language only: ${kinds(ledgers.nl)}`,
    `- reported to the first hub's dashboard: ${reported.map((series) => `${series.name} ${series.total} queries`).join(', ')}`,
    `- hubs' catalogues at the end (after a last sync): ${agora.catalogues.join(', ')} protocols`,
    `- LLM latency ${options.latencyMs} ms per call; actions played one after another. At 1 s per call the LLM alone would take about ${number(nlCalls / 60, 0)} min for the natural-language run and ${number(agoraCalls / 60, 0)} min for the Agora run`,
    `- where the Agora run's time went: ${number(sum(writing, (o) => o.ms) / 1000, 0)} s in the ${writing.length} actions that wrote a routine (the LLM's reply, then building, type-checking and checking it in QuickJS), ${number(sum(agora.outcomes, (o) => (o.wroteRoutine ? 0 : o.ms)) / 1000, 0)} s in the ${agora.outcomes.length - writing.length} others; natural language only: ${number(sum(nl.outcomes, (o) => o.ms) / nl.outcomes.length, 0)} ms per action`,
    '',
    costBreakdown(agora.outcomes, Math.min(options.tail ?? 300, world.actions.length)),
    '',
    `- answers checked against the hidden tables: ${mismatches.length === 0 ? `all ${2 * world.actions.length} right` : `${mismatches.length} wrong`}`,
  ].join('\n');
  return { markdown, svg, mismatches, ratio, runs };
}
