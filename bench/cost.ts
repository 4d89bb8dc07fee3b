// `npm run bench:cost`: what the Agora lifecycle saves in LLM calls and tokens (spec §6).
//
// Two of our agents on loopback: a weather agent (startAgent on a temporary folder holding only its tool,
// tools/get-forecast.ts: no protocol, no routine) and an assistant (a Sender with the typed task
// get_weather({ city, date }) → { weather, precipitation }). Each has its own FakeAnthropic running the
// deterministic brain of examples/weather/brain.ts, with tokens ≈ characters / 4 of prompt and reply. The same
// queries, cycling over the hidden forecast table, run twice:
//   (a) natural language all the way (the thresholds are never reached);
//   (b) the lifecycle: natural language; from the 6th query a look for a protocol (none is listed); at the 11th
//       a negotiation; protocol queries answered by both LLMs; after 5 of them a routine on each side
//       (approved automatically); from then on no LLM call at all.
//
// Determinism over realism: routines are written in the background, and after each query the bench waits for
// that work (`agent.generator.idle()`, `TaskRoutineStore.idle()` through the assistant), so the query that
// triggers a routine pays for writing it and the next query uses it. A live agent would serve a few more
// queries with its LLM while a routine is written and type-checked (a few seconds).
//
// Figures are the fake API's bills, checked against what the agents meter themselves. Every output is checked
// against the hidden table: any mismatch is printed and the exit code is 1.
//   (c) a network: a hub and several user/service pairs on the same task (bench/_cost-network.ts): the first pair
//       negotiates and publishes its protocol, the next find it at the hub and negotiate nothing.
// `npm run bench:cost -- --queries 200 --window 20 --pairs 3 --pair-queries 30` for a shorter run.
import { join } from 'node:path';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { AnthropicModel } from '../src/llm/anthropic/model.js';
import { silentLogger, type Logger } from '../src/log.js';
import { startAgent } from '../src/agent.js';
import { z } from 'zod';
import { FakeAnthropic } from '../src/testing/fake-anthropic.js';
import {
  agentCost,
  approvedRoutines,
  pathOf,
  routineAnswers,
  startAssistant,
  temporaryCopy,
} from '../examples/_shared.js';
import { brain } from '../examples/weather/brain.js';
import { forecast, weatherQuery } from '../examples/weather/data.js';
import { formatNumber, table } from './_harness.js';
import { runNetwork } from './_cost-network.js';

const { values } = parseArgs({
  options: {
    queries: { type: 'string', default: '1000' },
    window: { type: 'string', default: '100' },
    pairs: { type: 'string', default: '3' },
    'pair-queries': { type: 'string', default: '30' },
  },
});
const queries = Number(values.queries);
const windowSize = Number(values.window);
const progress = (line: string) => process.stderr.write(`${line}\n`);

// Warnings would mean the lifecycle went off its path: show them.
const logger: Logger = {
  ...silentLogger,
  warn: (message) => progress(`warn: ${message}`),
  error: (message) => progress(`error: ${message}`),
};

const GetWeather = {
  name: 'get_weather',
  description: 'The weather forecast for a city on a date.',
  input: z.object({ city: z.string(), date: z.string().describe('YYYY-MM-DD') }),
  output: z.object({ weather: z.string(), precipitation: z.number().describe('chance of precipitation in %') }),
};

/** One task call: what both agents' LLMs cost for it, and how it was served. */
type QueryCost = { calls: number; tokens: number; path: string };
type Run = {
  costs: QueryCost[];
  markers: string[];
  mismatches: string[];
  metered: { fake: number; agents: number };
  seconds: number;
};

async function run(lifecycle: boolean): Promise<Run> {
  const started = performance.now();
  const folder = await temporaryCopy('agora-bench-cost-', {
    'agent/tools': 'weather/agent/tools',
    'data.ts': 'weather/data.ts',
  });
  const fakes = {
    weather: await FakeAnthropic.start({ fallback: brain, tokenModel: 'chars' }),
    assistant: await FakeAnthropic.start({ fallback: brain, tokenModel: 'chars' }),
  };
  const model = (fake: FakeAnthropic) =>
    new AnthropicModel({ baseURL: fake.url, apiKey: 'fake', maxRetries: 0, model: 'fake-brain' });
  const weather = await startAgent({
    dir: join(folder.dir, 'agent'),
    name: 'weather',
    description: 'Weather forecasts for cities.',
    port: 0,
    host: '127.0.0.1',
    llm: model(fakes.weather),
    routineThreshold: 5,
    autoApprove: true,
    watch: false,
    logger,
  });
  const assistant = await startAssistant({
    dir: join(folder.dir, 'assistant'),
    llm: model(fakes.assistant),
    logger,
    threshold: 5,
    ...(lifecycle ? {} : { thresholds: { lookForProtocolFrom: Infinity, negotiateFrom: Infinity } }),
  });
  const getWeather = assistant.sender.task(GetWeather);
  const billed = () =>
    [fakes.weather.totals(), fakes.assistant.totals()].reduce(
      (sum, totals) => ({
        calls: sum.calls + totals.calls,
        tokens: sum.tokens + totals.inputTokens + totals.outputTokens,
      }),
      { calls: 0, tokens: 0 },
    );

  const costs: QueryCost[] = [];
  const markers: string[] = [];
  const mismatches: string[] = [];
  const approved = new Set<string>();
  try {
    for (let index = 1; index <= queries; index++) {
      const input = weatherQuery(index - 1);
      const before = { billed: billed(), routines: routineAnswers(weather) };
      const output = await getWeather(input, { target: weather.url });
      await Promise.all([weather.generator?.idle(), assistant.idle()]);
      const after = billed();
      const path = pathOf(assistant.last, routineAnswers(weather) > before.routines);
      costs.push({ calls: after.calls - before.billed.calls, tokens: after.tokens - before.billed.tokens, path });

      const expected = forecast(input.city, input.date);
      if (!isDeepStrictEqual(output, expected))
        mismatches.push(
          `query ${index}: ${JSON.stringify(input)} → ${JSON.stringify(output)}, expected ${JSON.stringify(expected)}`,
        );
      if (!lifecycle) continue;
      if (index === 6)
        markers.push(
          `query 6: looked for a fitting protocol: the weather agent lists ${Object.keys(await assistant.sender.wellknown(weather.url)).length} (the look repeats up to query 10)`,
        );
      const previous = costs.at(-2)?.path;
      if (path !== 'NL' && previous === 'NL') {
        const state = await assistant.sender.taskState(GetWeather.name, weather.url);
        const negotiation = state.negotiation?.outcome === 'agreed' ? ` in ${state.negotiation.rounds} round(s)` : '';
        markers.push(
          `query ${index}: protocol negotiated${negotiation} (sha1 ${state.protocolHash}); first query under it`,
        );
      }
      if (approved.size < 2) {
        for (const [side, names] of [
          ['weather agent', await approvedRoutines(weather)],
          ['assistant', await assistant.approved()],
        ] as const) {
          for (const name of names) {
            if (approved.has(`${side}/${name}`)) continue;
            approved.add(`${side}/${name}`);
            markers.push(
              `query ${index}: routine approved on the ${side} side ("${name}"), written and checked during this query`,
            );
          }
        }
      }
      if (path === 'routines' && previous !== 'routines')
        markers.push(`query ${index}: first query with no LLM call on either side`);
      if (index % 100 === 0) progress(`  (b) ${index}/${queries}`);
    }
  } finally {
    await assistant.close();
    await weather.close();
    await fakes.weather.close();
    await fakes.assistant.close();
    await folder.remove();
  }
  // What the agents meter (receiver metrics, sender usage, routine writing) must be what the API billed.
  const metered = { fake: billed().calls, agents: agentCost(weather).calls + assistant.cost().calls };
  return { costs, markers, mismatches, metered, seconds: (performance.now() - started) / 1000 };
}

progress(`bench:cost: ${queries} queries, (a) natural language only`);
const a = await run(false);
progress(`bench:cost: ${queries} queries, (b) the full lifecycle`);
const b = await run(true);
progress(`bench:cost: (c) a network with a hub`);
const c = await runNetwork(GetWeather, {
  pairs: Number(values.pairs),
  queries: Number(values['pair-queries']),
  logger,
  progress,
});

const sum = (costs: QueryCost[], field: 'calls' | 'tokens') => costs.reduce((total, cost) => total + cost[field], 0);
const share = (costs: QueryCost[], path: string) => costs.filter((cost) => cost.path === path).length;
const rows: (string | number)[][] = [];
for (let start = 0; start < queries; start += windowSize) {
  const windowA = a.costs.slice(start, start + windowSize);
  const windowB = b.costs.slice(start, start + windowSize);
  rows.push([
    `${start + 1}–${Math.min(start + windowSize, queries)}`,
    formatNumber(sum(windowA, 'calls')),
    formatNumber(sum(windowA, 'tokens')),
    formatNumber(sum(windowB, 'calls')),
    formatNumber(sum(windowB, 'tokens')),
    `${share(windowB, 'NL')} / ${windowB.length - share(windowB, 'NL') - share(windowB, 'routines')} / ${share(windowB, 'routines')}`,
  ]);
}
const tokens = { a: sum(a.costs, 'tokens'), b: sum(b.costs, 'tokens') };
rows.push([
  '**total**',
  formatNumber(sum(a.costs, 'calls')),
  formatNumber(tokens.a),
  formatNumber(sum(b.costs, 'calls')),
  formatNumber(tokens.b),
  `${share(b.costs, 'NL')} / ${queries - share(b.costs, 'NL') - share(b.costs, 'routines')} / ${share(b.costs, 'routines')}`,
]);
// Where (b)'s tokens go, by path; the protocol stage carries the negotiation and the writing of both routines.
const stages = ['NL', 'PD+LLM', 'routines'].map((path) => {
  const costs = b.costs.filter((cost) =>
    path === 'PD+LLM' ? cost.path !== 'NL' && cost.path !== 'routines' : cost.path === path,
  );
  return [
    path,
    costs.length,
    formatNumber(sum(costs, 'calls')),
    formatNumber(sum(costs, 'tokens')),
    formatNumber(sum(costs, 'tokens') / Math.max(1, costs.length)),
  ];
});
const lastWindowCalls = sum(b.costs.slice(-windowSize), 'calls');
const ratio = tokens.a / Math.max(1, tokens.b);

const lines = [
  `## LLM cost of ${formatNumber(queries)} task calls: natural language only (a) vs the Agora lifecycle (b)`,
  '',
  'Both agents summed, as billed by their fake Messages APIs (tokens ≈ characters / 4). (b) paths: natural language / protocol with an LLM on at least one side / routines on both sides.',
  '',
  table(['queries', '(a) LLM calls', '(a) tokens', '(b) LLM calls', '(b) tokens', '(b) NL / PD+LLM / routines'], rows),
  '',
  '(b) by path:',
  '',
  table(['path', 'queries', 'LLM calls', 'tokens', 'tokens per query'], stages),
  '',
  `- tokens, (a) / (b): **${formatNumber(ratio, 1)}×** (target ≥ 20×)`,
  `- LLM calls in the last window of (b): **${lastWindowCalls}** (target 0)`,
  `- steady state: (a) ${formatNumber(tokens.a / queries)} tokens per query, (b) ${formatNumber(sum(b.costs.slice(-windowSize), 'tokens') / Math.max(1, Math.min(windowSize, queries)))}`,
  ...b.markers.map((marker) => `- (b) ${marker}`),
  `- metered by the agents = billed by the fake APIs: ${a.metered.fake === a.metered.agents && b.metered.fake === b.metered.agents ? 'yes' : `NO (a: ${a.metered.agents} vs ${a.metered.fake}, b: ${b.metered.agents} vs ${b.metered.fake})`}`,
  `- outputs checked against the hidden table: ${a.mismatches.length + b.mismatches.length === 0 ? `all ${2 * queries} correct` : `${a.mismatches.length} wrong in (a), ${b.mismatches.length} in (b)`}`,
  `- run time: (a) ${formatNumber(a.seconds, 1)} s, (b) ${formatNumber(b.seconds, 1)} s`,
];
lines.push('', c.markdown);
process.stdout.write(`${lines.join('\n')}\n`);
for (const mismatch of [
  ...a.mismatches.map((line) => `(a) ${line}`),
  ...b.mismatches.map((line) => `(b) ${line}`),
  ...c.mismatches,
])
  process.stderr.write(`mismatch: ${mismatch}\n`);
if (a.mismatches.length || b.mismatches.length || c.mismatches.length) process.exitCode = 1;
