// `npx tsx bench/hub.ts` (also a section of `npm run bench`): keyword routing time with 10,000 registered agents
// against 100 in the same run (target ≤ 2×: an inverted index, not a scan), with p99s, and directory search
// throughput. Agents are generated with a vocabulary that grows with the directory (new agents bring new topics,
// as in a real network) plus generic words every agent shares, whose postings grow with it.
import { performance } from 'node:perf_hooks';
import { agentId } from '../src/hub/registration.js';
import { Hub } from '../src/hub/hub.js';
import type { AgentRecord } from '../src/hub/records.js';

const GENERIC = [
  'data',
  'service',
  'fast',
  'report',
  'city',
  'text',
  'price',
  'team',
  'daily',
  'secure',
  'cloud',
  'api',
  'query',
  'result',
  'list',
  'file',
  'user',
  'order',
  'account',
  'update',
];

function topic(index: number): string[] {
  return [`topic${index}`, `skill${index}`, `area${index % 997}x${Math.floor(index / 997)}`];
}

async function directoryOf(count: number): Promise<Hub> {
  const hub = new Hub();
  for (let index = 0; index < count; index++) {
    const [a, b, c] = topic(Math.floor(index / 3));
    const url = `https://agent${index}.example`;
    const record: AgentRecord = {
      id: agentId(url),
      url,
      name: `agent-${index}`,
      kind: 'agora',
      description: `Handles ${a} and ${b} ${GENERIC[index % GENERIC.length]} ${GENERIC[(index * 7) % GENERIC.length]}.`,
      protocols: [
        {
          hash: index.toString(16).padStart(40, '0'),
          name: `${a} ${c}`,
          description: `Answers ${b} queries with ${GENERIC[(index * 3) % GENERIC.length]}.`,
          multiround: false,
        },
      ],
      capabilities: [],
      status: 'up',
      missedChecks: 0,
      registeredAt: 0,
      lastSeen: 0,
      lastChecked: 0,
    };
    await hub.directory.put(record);
  }
  return hub;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

type Operation = (hub: Hub, goal: string) => Promise<unknown>;

function goalsFor(count: number): string[] {
  return Array.from({ length: 64 }, (_, index) => {
    const [a, b] = topic(Math.floor(((index * 7919) % count) / 3));
    return `please ${a} the ${b} for the ${GENERIC[index % GENERIC.length]} team`;
  });
}

/** Times `iterations` calls, appending each call's time (ms) to `times`; returns the total. */
async function timeCalls(
  hub: Hub,
  goals: string[],
  iterations: number,
  run: Operation,
  times: number[],
): Promise<number> {
  const started = performance.now();
  for (let index = 0; index < iterations; index++) {
    const before = performance.now();
    await run(hub, goals[index % goals.length]!);
    times.push(performance.now() - before);
  }
  return performance.now() - started;
}

type Result = { mean: number; p50: number; p99: number; perSecond: number };

/**
 * Both directory sizes measured in alternating rounds, so the machine's noise (2 shared cores) falls on both
 * alike; each after a warm-up of its own.
 */
async function compare(
  hubs: Map<number, Hub>,
  run: Operation,
  rounds = 10,
  perRound = 500,
): Promise<Map<number, Result>> {
  const samples = new Map<number, { times: number[]; total: number }>();
  for (const [count, hub] of hubs) {
    await timeCalls(hub, goalsFor(count), 2000, run, []);
    samples.set(count, { times: [], total: 0 });
  }
  for (let round = 0; round < rounds; round++) {
    for (const [count, hub] of hubs) {
      const sample = samples.get(count)!;
      sample.total += await timeCalls(hub, goalsFor(count), perRound, run, sample.times);
    }
  }
  const results = new Map<number, Result>();
  for (const [count, { times, total }] of samples) {
    times.sort((x, y) => x - y);
    results.set(count, {
      mean: (total / times.length) * 1000,
      p50: percentile(times, 0.5) * 1000,
      p99: percentile(times, 0.99) * 1000,
      perSecond: times.length / (total / 1000),
    });
  }
  return results;
}

/** Runs the hub benchmark; returns its Markdown. */
export async function benchHub(log: (line: string) => void = () => {}): Promise<string> {
  const hubs = new Map<number, Hub>();
  for (const count of [100, 10_000]) {
    log(`hub: registering ${count} agents`);
    hubs.set(count, await directoryOf(count));
  }
  const rows: string[] = [];
  const operations: [string, Operation][] = [
    ['keyword routing', (hub, goal) => hub.route(goal)],
    ['directory search (20 hits)', (hub, goal) => hub.agents({ q: goal, limit: 20 })],
  ];
  for (const [name, run] of operations) {
    log(`hub: ${name}`);
    const results = await compare(hubs, run);
    const base = results.get(100)!;
    for (const [count, result] of results) {
      rows.push(
        `| ${name} | ${count.toLocaleString('en')} | ${result.p50.toFixed(1)} | ${result.p99.toFixed(1)} | ${Math.round(result.perSecond).toLocaleString('en')} | ${(result.mean / base.mean).toFixed(2)}× | ${(result.p50 / base.p50).toFixed(2)}× | ${(result.p99 / base.p99).toFixed(2)}× |`,
      );
    }
  }
  for (const hub of hubs.values()) await hub.close();
  return [
    'In-process (memory store), one caller; both sizes measured in alternating rounds of 500 calls. The machine is shared (2 cores, other jobs): single figures move by ±30 %, the ratios less.',
    '',
    '| operation | agents | p50 µs | p99 µs | per second | mean vs 100 agents (target ≤ 2×) | p50 vs 100 | p99 vs 100 |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(
    `## Hub: routing and search against directory size\n\n${await benchHub((line) => process.stderr.write(`${line}\n`))}\n`,
  );
}
