// `npx tsx bench/hub.ts` (also a section of `npm run bench`): keyword routing time with 10,000 registered agents
// against 100 in the same run (target ≤ 2×: an inverted index, not a scan), with p99s, and directory search
// throughput. Agents are generated with a vocabulary that grows with the directory (new agents bring new topics,
// as in a real network) plus generic words every agent shares, whose postings grow with it.
import { performance } from 'node:perf_hooks';
import { agentId } from '../src/hub/directory.js';
import { Hub } from '../src/hub/hub.js';
import type { AgentRecord } from '../src/hub/records.js';

const GENERIC = ['data', 'service', 'fast', 'report', 'city', 'text', 'price', 'team', 'daily', 'secure', 'cloud', 'api', 'query', 'result', 'list', 'file', 'user', 'order', 'account', 'update'];

function topic(index: number): string[] {
  return [`topic${index}`, `skill${index}`, `area${index % 997}x${Math.floor(index / 997)}`];
}

async function directoryOf(count: number): Promise<Hub> {
  const hub = new Hub();
  for (let index = 0; index < count; index++) {
    const [a, b, c] = topic(Math.floor(index / 3));
    const url = `https://agent${index}.example`;
    const record: AgentRecord = {
      id: agentId(url), url, name: `agent-${index}`, kind: 'agora',
      description: `Handles ${a} and ${b} ${GENERIC[index % GENERIC.length]} ${GENERIC[(index * 7) % GENERIC.length]}.`,
      protocols: [{ hash: index.toString(16).padStart(40, '0'), name: `${a} ${c}`, description: `Answers ${b} queries with ${GENERIC[(index * 3) % GENERIC.length]}.`, multiround: false }],
      capabilities: [], status: 'up', missedChecks: 0, registeredAt: 0, lastSeen: 0, lastChecked: 0,
    };
    await hub.directory.put(record);
  }
  return hub;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

async function measure(hub: Hub, count: number, iterations: number, run: (hub: Hub, goal: string) => Promise<unknown>) {
  const goals = Array.from({ length: 64 }, (_, index) => {
    const [a, b] = topic(Math.floor(((index * 7919) % count) / 3));
    return `please ${a} the ${b} for the ${GENERIC[index % GENERIC.length]} team`;
  });
  for (let index = 0; index < 3000; index++) await run(hub, goals[index % goals.length]!);
  const times: number[] = [];
  const started = performance.now();
  for (let index = 0; index < iterations; index++) {
    const before = performance.now();
    await run(hub, goals[index % goals.length]!);
    times.push(performance.now() - before);
  }
  const total = performance.now() - started;
  times.sort((x, y) => x - y);
  return { mean: (total / iterations) * 1000, p50: percentile(times, 0.5) * 1000, p99: percentile(times, 0.99) * 1000, perSecond: iterations / (total / 1000) };
}

/** Runs the hub benchmark; returns its Markdown. */
export async function benchHub(log: (line: string) => void = () => {}): Promise<string> {
  const rows: string[] = [];
  const results = new Map<string, Awaited<ReturnType<typeof measure>>>();
  for (const count of [100, 10_000]) {
    log(`hub: ${count} agents`);
    const hub = await directoryOf(count);
    results.set(`route ${count}`, await measure(hub, count, 5000, (target, goal) => target.route(goal)));
    results.set(`search ${count}`, await measure(hub, count, 5000, (target, goal) => target.agents({ q: goal, limit: 20 })));
    await hub.close();
  }
  for (const kind of ['route', 'search']) {
    const base = results.get(`${kind} 100`)!;
    for (const count of [100, 10_000]) {
      const result = results.get(`${kind} ${count}`)!;
      rows.push(`| ${kind === 'route' ? 'keyword routing' : 'directory search (20 hits)'} | ${count.toLocaleString('en')} | ${result.p50.toFixed(1)} | ${result.p99.toFixed(1)} | ${Math.round(result.perSecond).toLocaleString('en')} | ${(result.mean / base.mean).toFixed(2)}× | ${(result.p50 / base.p50).toFixed(2)}× |`);
    }
  }
  return ['| operation | agents | p50 µs | p99 µs | per second | mean time vs 100 agents (target ≤ 2×) | p50 vs 100 |', '|---|---:|---:|---:|---:|---:|---:|', ...rows].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`## Hub: routing and search against directory size\n\n${await benchHub((line) => process.stderr.write(`${line}\n`))}\n`);
}
