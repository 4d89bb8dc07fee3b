// Benchmarks of issue 33, items 5 and 7. `npm run bench -- --only hub-scale` (or `--only workers`).
//
// hub-scale: the first GET /route after a registration with 5,000 registered agents against 100 (target ≤ 2×), on
// one hub and, with Redis, on a second hub process's view (the registration is a foreign change there). One fake
// agent server answers for every registered path, each with a document of its own, so a registration writes the
// catalogue and the directory as a real one does.
//
// workers: `agora serve --workers 2` on Redis against one process on Redis, in alternating rounds: routine queries
// (target ≥ 1.25×), multiround follow-ups (target: no slower), and the CPU per request of every process involved.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { agentId } from '../src/hub/registration.js';
import type { AgentRecord } from '../src/hub/records.js';
import { RedisHubStore } from '../src/hub/redis-store.js';
import { startHub, type RunningHub } from '../src/hub/server.js';
import type { HubStore } from '../src/hub/store.js';
import { silentLogger } from '../src/log.js';
import { hashText } from '../src/protocol/document.js';
import {
  alternating,
  formatNumber,
  loadGenerator,
  median,
  pairedRatio,
  startProcess,
  table,
  treeCpuSeconds,
  type AlternatingResult,
} from './_harness.js';
import { FOLLOW_UP, NO_LLM, SINGLE, startConversations, withRedis } from './scale.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const SIZES = [100, 5000] as const;
const REGISTRATIONS = 15;

/** The sections `bench/run.ts` runs. */
export function sections(duration: number, log: (line: string) => void): [string, () => Promise<string>][] {
  return [
    ['hub-scale', () => benchHubScale(log)],
    ['workers', () => benchWorkers(duration, log)],
  ];
}

// ------------------------------------------------------------------------------------------- hub-scale

const documentOf = (index: number) =>
  `---\nname: Forecast ${index}\ndescription: Weather forecast number ${index} for a city.\nmultiround: false\n---\nThe sender sends JSON {"city": string}.\n`;

/** One server answering as agent `/a<n>` for every n: its /wellknown lists one document of its own. */
async function fakeAgents(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    const match = /^\/a(\d+)\/(wellknown|protocols\/([0-9a-f]{40}))$/.exec(request.url ?? '');
    if (!match) {
      response.writeHead(404).end();
      return;
    }
    const text = documentOf(Number(match[1]));
    if (match[2] === 'wellknown')
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ [hashText(text)]: [] }));
    else response.writeHead(200, { 'content-type': 'text/markdown' }).end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** `count` agents written straight to a hub's directory (what registrations leave), each with a protocol. */
async function fill(hub: RunningHub, count: number): Promise<void> {
  for (let index = 0; index < count; index++) {
    const url = `https://agent${index}.example`;
    const record: AgentRecord = {
      id: agentId(url),
      url,
      name: `agent-${index}`,
      kind: 'agora',
      description: `Handles topic${index} and skill${index % 500} reports.`,
      protocols: [
        {
          hash: index.toString(16).padStart(40, '0'),
          name: `topic${index} service`,
          description: `Answers skill${index % 500} queries.`,
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
    await hub.hub.directory.put(record);
  }
}

async function timed(work: () => Promise<Response>): Promise<number> {
  const started = performance.now();
  const response = await work();
  await response.arrayBuffer();
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return performance.now() - started;
}

type HubFigures = { firstRoute: number; route: number; register: number };

/** Registrations on `writer`, each followed by a first GET /route on `reader` (the same hub, or another on the store). */
async function measureHub(writer: RunningHub, reader: RunningHub, agents: string, offset: number): Promise<HubFigures> {
  const goal = encodeURIComponent('weather forecast for paris');
  const first: number[] = [];
  const steady: number[] = [];
  const register: number[] = [];
  for (let index = 0; index < REGISTRATIONS + 2; index++) {
    const body = JSON.stringify({ url: `${agents}/a${offset + index}`, name: `fake-${offset + index}` });
    const registered = await timed(() =>
      fetch(`${writer.url}/agents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }),
    );
    const firstRoute = await timed(() => fetch(`${reader.url}/route?goal=${goal}`));
    let again = 0;
    for (let round = 0; round < 5; round++) again += await timed(() => fetch(`${reader.url}/route?goal=${goal}`));
    // The first two are warm-up (code paths compiled, connections open).
    if (index < 2) continue;
    first.push(firstRoute);
    steady.push(again / 5);
    register.push(registered);
  }
  return { firstRoute: median(first), route: median(steady), register: median(register) };
}

async function hubPair(store: () => HubStore | undefined): Promise<[RunningHub, RunningHub]> {
  const options = {
    port: 0,
    tickMs: 0,
    rooms: false as const,
    allowPrivateAgents: true,
    logger: silentLogger,
    maxAgents: 20_000,
  };
  const first = store();
  const a = await startHub({ ...options, ...(first ? { store: first } : {}) });
  const second = store();
  const b = second ? await startHub({ ...options, store: second }) : a;
  return [a, b];
}

async function benchHubScale(log: (line: string) => void): Promise<string> {
  const title = `## Hub: the first GET /route after a registration, ${formatNumber(SIZES[1])} agents against ${SIZES[0]} (median of ${REGISTRATIONS} registrations)`;
  const agents = await fakeAgents();
  const rows: (string | number)[][] = [];
  const ratios: (string | number)[][] = [];
  try {
    const run = async (label: string, store: () => HubStore | undefined) => {
      const figures: HubFigures[] = [];
      for (const size of SIZES) {
        log(`  ${label}, ${size} agents…`);
        const [a, b] = await hubPair(store);
        try {
          await fill(a, size);
          const measured = await measureHub(a, b, agents.url, size * 10);
          figures.push(measured);
          rows.push([
            label,
            formatNumber(size),
            formatNumber(measured.register, 2),
            formatNumber(measured.firstRoute, 2),
            formatNumber(measured.route, 2),
          ]);
        } finally {
          await a.close();
          if (b !== a) await b.close();
        }
      }
      ratios.push([
        `first /route, ${label}: ${formatNumber(SIZES[1])}/${SIZES[0]}`,
        formatNumber(figures[1]!.firstRoute / figures[0]!.firstRoute, 2),
        '≤ 2',
      ]);
    };
    await run('one hub, memory store', () => undefined);
    const withStore = await withRedis('', log, async (storeUrl) => {
      const url = new URL(storeUrl);
      const prefix = url.searchParams.get('prefix')!;
      url.searchParams.delete('prefix');
      let sequence = 0;
      // Two hub processes' stores on one prefix per size: a registration on one, the first /route on the other.
      await run(
        'two hubs on Redis (route on the other)',
        () => new RedisHubStore(url.href, { prefix: `${prefix}${Math.floor(sequence++ / 2)}:`, logger: silentLogger }),
      );
      return 'done';
    });
    if (!withStore.includes('done')) rows.push(['two hubs on Redis', '—', '—', 'skipped: no Redis', '—']);
  } finally {
    await agents.close();
  }
  return [
    title,
    '',
    table(['hub', 'agents', 'POST /agents ms', 'first /route after it, ms', '/route again, ms'], rows),
    '',
    table(['ratio', 'value', 'target'], ratios),
    '',
    'Each registration reads a fake agent over loopback and writes a new document and the agent: two writes to the store. Times are end to end from a client in the same process; the machine is shared, so single figures are noisy and the ratio is what to read.',
  ].join('\n');
}

// ------------------------------------------------------------------------------------------- workers

const CONVERSATIONS = 200;
/** Requests written at once on each connection in the pipelined rounds. */
const PIPELINE = 8;

async function benchWorkers(duration: number, log: (line: string) => void): Promise<string> {
  const title = `## Every core: agora serve --workers 2 vs one process, both on Redis (${duration} s per round, 3 alternating rounds, 50 connections, load from ${loadGenerator()})`;
  return withRedis(title, log, async (storeUrl) => {
    const storeOf = (name: string) => {
      const url = new URL(storeUrl);
      url.searchParams.set('prefix', `${url.searchParams.get('prefix')}${name}:`);
      return url.href;
    };
    const one = await startProcess(
      'bin/agora.js',
      ['serve', root, '--port', '0', '--quiet-requests', '--store', storeOf('one')],
      NO_LLM,
    );
    const two = await startProcess(
      'bin/agora.js',
      ['serve', root, '--port', '0', '--quiet-requests', '--store', storeOf('two'), '--workers', '2'],
      NO_LLM,
    );
    try {
      const cpu = (server: typeof one) => () => treeCpuSeconds(server.child.pid!);
      log('  routine queries…');
      const singles = await alternating(
        [
          { name: 'routine query, one process', url: one.url, body: SINGLE, connections: 50, cpuSeconds: cpu(one) },
          { name: 'routine query, 2 workers', url: two.url, body: SINGLE, connections: 50, cpuSeconds: cpu(two) },
        ],
        3,
        duration,
        log,
      );
      // The same queries with 8 pipelined on each connection: the load generator and the kernel then take a smaller
      // share of the two cores, which shows what the second worker gives the server itself.
      log('  routine queries, pipelined…');
      const pipelined = await alternating(
        [
          {
            name: 'routine query ×8 pipelined, one process',
            url: one.url,
            body: SINGLE,
            connections: 50,
            pipelining: PIPELINE,
            cpuSeconds: cpu(one),
          },
          {
            name: 'routine query ×8 pipelined, 2 workers',
            url: two.url,
            body: SINGLE,
            connections: 50,
            pipelining: PIPELINE,
            cpuSeconds: cpu(two),
          },
        ],
        3,
        duration,
        log,
      );
      log('  follow-ups…');
      const paths = async (url: string) =>
        (await startConversations(url, CONVERSATIONS)).map((id) => `/conversations/${id}`);
      const follows = await alternating(
        [
          {
            name: 'follow-up, one process',
            url: one.url,
            body: FOLLOW_UP,
            paths: await paths(one.url),
            connections: 50,
            cpuSeconds: cpu(one),
          },
          {
            name: 'follow-up, 2 workers',
            url: two.url,
            body: FOLLOW_UP,
            paths: await paths(two.url),
            connections: 50,
            cpuSeconds: cpu(two),
          },
        ],
        3,
        duration,
        log,
      );
      const micros = (value: number | undefined) => (value === undefined ? '—' : formatNumber(value));
      const row = (result: AlternatingResult) => [
        result.name,
        formatNumber(result.requestsPerSecond),
        result.p50,
        result.p99,
        result.errors + result.non2xx,
        micros(result.cpuMicrosPerRequest),
        micros(result.machineMicrosPerRequest),
        result.machineBusy === undefined ? '—' : `${Math.round(result.machineBusy * 100)}%`,
      ];
      // What two cores allow at all: the whole machine's CPU per request (server, load generator, kernel, Redis) of
      // the one-process rounds, against what the one process reached.
      const bound = (result: AlternatingResult) =>
        result.machineMicrosPerRequest && result.machineBusy !== undefined
          ? formatNumber(1 / result.machineBusy, 2)
          : '—';
      const cpuRatio = (pair: AlternatingResult[]) =>
        pair[1]!.cpuMicrosPerRequest && pair[0]!.cpuMicrosPerRequest
          ? formatNumber(pair[1]!.cpuMicrosPerRequest / pair[0]!.cpuMicrosPerRequest, 2)
          : '—';
      return [
        table(
          [
            'server',
            'req/s (best round)',
            'p50 ms',
            'p99 ms',
            'errors',
            'server CPU µs/request',
            'machine CPU µs/request',
            'machine busy',
          ],
          [...singles, ...pipelined, ...follows].map(row),
        ),
        '',
        table(
          ['ratio (median of paired rounds)', 'value', 'target'],
          [
            [
              '2 workers / one process, routine queries',
              formatNumber(pairedRatio(singles[1]!, singles[0]!), 2),
              '≥ 1.25',
            ],
            [
              'the most any server could gain over one process here, routine queries (1 ÷ machine busy with one process)',
              bound(singles[0]!),
              '—',
            ],
            [
              '2 workers / one process, routine queries ×8 pipelined',
              formatNumber(pairedRatio(pipelined[1]!, pipelined[0]!), 2),
              '—',
            ],
            [
              '2 workers / one process, follow-ups',
              formatNumber(pairedRatio(follows[1]!, follows[0]!), 2),
              '≥ 1 (no slower)',
            ],
            ['CPU per request, 2 workers / one, routine queries', cpuRatio(singles), '~1'],
            ['CPU per request, 2 workers / one, follow-ups', cpuRatio(follows), '~1'],
          ],
        ),
        '',
        'Server CPU counts every process of the server (the primary and its workers), not redis-server nor the load generator, which share the same cores. Machine CPU counts every process and the kernel (loopback TCP included) over the round: when one process already keeps the machine nearly busy, no number of workers can add more than what is left. The machine is shared with other work: figures are noisy.',
      ].join('\n');
    } finally {
      await Promise.all([one.stop(), two.stop()]);
    }
  });
}
