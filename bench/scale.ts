// Benchmarks of issue 7: scaling out on Redis. Each section prints its figures with ratios against a baseline
// measured in the same run, and its target. Not timed tests: figures vary with the machine (and with whatever
// else shares its cores); the ratios are what we track.
//
// `npm run bench -- --only store` (or processes, idle-memory, startup). The Redis sections use
// AGORA_BENCH_REDIS_URL, else AGORA_TEST_REDIS_URL, else a throwaway redis-server when one is installed.
// This file is also the entry of the child processes the memory and start-up sections measure in
// (`node --import tsx bench/scale.ts child <kind> …`), so each measurement starts from a fresh heap.
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { nanoid } from 'nanoid';
import { MemoryConversationStore, type ConversationRecord } from '../src/conversation/store.js';
import { silentLogger } from '../src/log.js';
import { hashText } from '../src/protocol/document.js';
import { Receiver } from '../src/receiver.js';
import type { BenchServer, LoadResult } from './_harness.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const self = fileURLToPath(import.meta.url);

const SHOPPING_HASH = hashText(readFileSync(join(root, 'protocols/shopping-list.md')));
const CONVERSION_HASH = hashText(readFileSync(join(root, 'protocols/unit-conversion.md')));
export const SINGLE = JSON.stringify({ protocolHash: CONVERSION_HASH, body: { value: 10, from: 'km', to: 'mi' } });
const FIRST_TURN = { action: 'add', item: 'tea' } as const;
export const FOLLOW_UP = JSON.stringify({ body: FIRST_TURN });
const CONVERSATIONS = 200;
/** Served processes get no LLM, whatever the environment holds. */
export const NO_LLM = { ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: '' };

/** The sections `bench/run.ts` runs, each returning its Markdown. */
export function sections(duration: number, log: (line: string) => void): [string, () => Promise<string>][] {
  const withHarness = (run: () => Promise<string>) => async () => {
    harness ??= await import('./_harness.js');
    return run();
  };
  return [
    ['store', withHarness(() => benchStore(duration, log))],
    ['processes', withHarness(() => benchProcesses(duration, log))],
    ['idle-memory', withHarness(() => benchIdleMemory(log))],
    ['startup', withHarness(() => benchStartup(log))],
  ];
}

// The harness (and autocannon with it) is imported only by the sections, so the child processes this file also
// runs as (below) start as lean as an agent does.
let harness: typeof import('./_harness.js') | undefined;
const loaded = () => {
  if (!harness) throw new Error('bench/scale.ts: the harness is not loaded');
  return harness;
};
const formatNumber = (value: number, digits?: number) => loaded().formatNumber(value, digits);
const table = (header: string[], rows: (string | number)[][]) => loaded().table(header, rows);
const load = (...args: Parameters<typeof import('./_harness.js').load>) => loaded().load(...args);
const startProcess = (...args: Parameters<typeof import('./_harness.js').startProcess>) =>
  loaded().startProcess(...args);
const loadGenerator = () => loaded().loadGenerator();

// ---------------------------------------------------------------------------------------------- Redis

const freePort = () =>
  new Promise<number>((done, fail) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
    server.on('error', fail);
  });

async function ping(url: string): Promise<boolean> {
  const redis = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

/** A Redis for a section: the configured one, else a throwaway server; undefined when there is none. */
async function openRedis(log: (line: string) => void): Promise<{ url: string; close(): Promise<void> } | undefined> {
  const configured = process.env.AGORA_BENCH_REDIS_URL || process.env.AGORA_TEST_REDIS_URL;
  if (configured) return { url: configured, close: async () => {} };
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) return undefined;
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'agora-bench-redis-'));
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${port}/0`;
  const close = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const closed = new Promise((done) => child.once('close', done));
      child.kill('SIGTERM');
      await closed;
    }
    await rm(dir, { recursive: true, force: true });
  };
  for (let attempt = 0; attempt < 50; attempt++) {
    if (await ping(url)) {
      log(`  throwaway redis-server at ${url}`);
      return { url, close };
    }
    await delay(100);
  }
  await close();
  return undefined;
}

/** Runs `work` against a Redis under a fresh key prefix, removing the prefix's keys afterwards. */
export async function withRedis(
  title: string,
  log: (line: string) => void,
  work: (storeUrl: string) => Promise<string>,
): Promise<string> {
  const redis = await openRedis(log);
  if (!redis) return `${title}\n\nSkipped: no Redis (set AGORA_BENCH_REDIS_URL, or install redis-server).`;
  const prefix = `agora-bench:${randomUUID()}:`;
  const storeUrl = new URL(redis.url);
  storeUrl.searchParams.set('prefix', prefix);
  try {
    return `${title}\n\n${await work(storeUrl.href)}`;
  } finally {
    const client = new Redis(redis.url);
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await client.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    await client.quit();
    await redis.close();
  }
}

// ------------------------------------------------------------------------------------------ HTTP load

const serve = (store: string): Promise<BenchServer> =>
  startProcess('bin/agora.js', ['serve', root, '--port', '0', '--store', store], NO_LLM);

/** Stops servers once the requests the load generator abandoned at its deadline are done, so none meets a closed store. */
async function stopServers(...servers: BenchServer[]): Promise<void> {
  await delay(500);
  await Promise.all(servers.map((server) => server.stop()));
}

/** Starts `count` shopping-list conversations on a server; their ids. */
export async function startConversations(url: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index++) {
    const response = await fetch(`${url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ protocolHash: SHOPPING_HASH, multiround: true, body: FIRST_TURN }),
    });
    const reply = (await response.json()) as { conversationId?: string };
    if (!reply.conversationId) throw new Error(`no conversation started on ${url}: ${JSON.stringify(reply)}`);
    ids.push(reply.conversationId);
  }
  return ids;
}

type Workload = { kind: 'single' } | { kind: 'follow-up'; ids: string[] };

/** Load of one workload against one server; follow-ups go round the conversations, one turn each in turn. */
function loadWorkload(
  name: string,
  url: string,
  workload: Workload,
  duration: number,
  connections = 50,
): Promise<LoadResult> {
  if (workload.kind === 'single') return load(name, { url, body: SINGLE, duration, connections });
  return load(name, {
    url,
    duration,
    connections,
    body: FOLLOW_UP,
    paths: workload.ids.map((id) => `/conversations/${id}`),
  });
}

/** Two loads at once, as one result: requests per second summed, latencies the worse of the two. */
function combine(name: string, results: LoadResult[]): LoadResult {
  return {
    name,
    requestsPerSecond: results.reduce((sum, result) => sum + result.requestsPerSecond, 0),
    p50: Math.max(...results.map((result) => result.p50)),
    p99: Math.max(...results.map((result) => result.p99)),
    errors: results.reduce((sum, result) => sum + result.errors, 0),
    non2xx: results.reduce((sum, result) => sum + result.non2xx, 0),
  };
}

const loadRow = (result: LoadResult) => [
  result.name,
  formatNumber(result.requestsPerSecond),
  result.p50,
  result.p99,
  result.errors + result.non2xx,
];
const LOAD_HEADER = ['server', 'req/s', 'p50 ms', 'p99 ms', 'errors'];

// ------------------------------------------------------------------------------------------- sections

/** Redis store vs memory store, one `agora serve` each, on single-round queries and multiround follow-ups. */
async function benchStore(duration: number, log: (line: string) => void): Promise<string> {
  const title = `## Redis store vs memory store (agora serve, ${duration} s per run, 50 connections, follow-ups over ${CONVERSATIONS} conversations)`;
  return withRedis(title, log, async (storeUrl) => {
    const results: Record<string, LoadResult> = {};
    for (const [label, store] of [
      ['memory', 'memory'],
      ['redis', storeUrl],
    ] as const) {
      log(`  ${label} store…`);
      const server = await serve(store);
      try {
        await loadWorkload('warm-up', server.url, { kind: 'single' }, 1);
        results[`single ${label}`] = await loadWorkload(
          `single-round, ${label} store`,
          server.url,
          { kind: 'single' },
          duration,
        );
        const followUp: Workload = { kind: 'follow-up', ids: await startConversations(server.url, CONVERSATIONS) };
        await loadWorkload('warm-up', server.url, followUp, 1);
        results[`follow ${label}`] = await loadWorkload(
          `multiround follow-up, ${label} store`,
          server.url,
          followUp,
          duration,
        );
      } finally {
        await stopServers(server);
      }
    }
    const ratio = (workload: string) =>
      results[`${workload} redis`]!.requestsPerSecond / results[`${workload} memory`]!.requestsPerSecond;
    return [
      table(
        LOAD_HEADER,
        ['single memory', 'single redis', 'follow memory', 'follow redis'].map((key) => loadRow(results[key]!)),
      ),
      '',
      table(
        ['ratio', 'value', 'target'],
        [
          ['redis/memory, single-round (store untouched)', formatNumber(ratio('single'), 2), '≥ 0.50'],
          ['redis/memory, multiround follow-up', formatNumber(ratio('follow'), 2), '≥ 0.50'],
        ],
      ),
    ].join('\n');
  });
}

/** Two `agora serve` processes on one Redis against one, loaded by two load generators at once. */
async function benchProcesses(duration: number, log: (line: string) => void): Promise<string> {
  const title = `## Two processes on one Redis vs one (agora serve, ${duration} s per run, 50 connections in all)`;
  return withRedis(title, log, async (storeUrl) => {
    const [a, b] = await Promise.all([serve(storeUrl), serve(storeUrl)]);
    try {
      const ids = await startConversations(a.url, CONVERSATIONS);
      const half = CONVERSATIONS / 2;
      const workloads: [string, Workload, Workload, Workload][] = [
        ['single-round', { kind: 'single' }, { kind: 'single' }, { kind: 'single' }],
        // Each process gets its own half of the conversations, so the two never wait on each other's locks.
        [
          'multiround follow-up',
          { kind: 'follow-up', ids },
          { kind: 'follow-up', ids: ids.slice(0, half) },
          { kind: 'follow-up', ids: ids.slice(half) },
        ],
      ];
      const rows: LoadResult[] = [];
      const ratios: (string | number)[][] = [];
      for (const [name, both, first, second] of workloads) {
        log(`  ${name}…`);
        await Promise.all([
          loadWorkload('warm-up', a.url, first, 1, 25),
          loadWorkload('warm-up', b.url, second, 1, 25),
        ]);
        const one = await loadWorkload(`${name}, one process`, a.url, both, duration, 50);
        const two = combine(
          `${name}, two processes`,
          await Promise.all([
            loadWorkload('a', a.url, first, duration, 25),
            loadWorkload('b', b.url, second, duration, 25),
          ]),
        );
        rows.push(one, two);
        ratios.push([
          `two/one, ${name}`,
          formatNumber(two.requestsPerSecond / one.requestsPerSecond, 2),
          '> 1 with spare cores; ~1 expected here',
        ]);
      }
      return [
        table(LOAD_HEADER, rows.map(loadRow)),
        '',
        table(['ratio', 'value', 'target'], ratios),
        '',
        `Two load generators (${loadGenerator()}) run at once, one per process; on this ${cores()}-core machine they, the two servers and redis-server share the cores, so a second process adds less than it would with cores to spare.`,
      ].join('\n');
    } finally {
      await stopServers(a, b);
    }
  });
}

function cores(): number {
  return availableParallelism();
}

/** Runs `bench/scale.ts child …` in a fresh Node process and parses the JSON line it prints. */
function runChild<T>(args: string[], nodeFlags: string[] = []): Promise<T> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', self, 'child', ...args], {
      cwd: root,
      env: { ...process.env, ...NO_LLM },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', fail);
    child.on('close', (code) => {
      const line = output.trim().split('\n').pop() ?? '';
      try {
        if (code !== 0) throw new Error(`exit ${code}`);
        done(JSON.parse(line) as T);
      } catch (error) {
        fail(new Error(`bench/scale.ts child ${args.join(' ')} failed (${String(error)}): ${output}`));
      }
    });
  });
}

const IDLE_CONVERSATIONS = 100_000;
type IdleResult = {
  mode: string;
  conversations: number;
  heapBefore: number;
  heapAfter: number;
  bytesPerConversation: number;
  seconds: number;
};

/** Heap per idle conversation: the bare store's record alone, then whole first turns through a Receiver. */
async function benchIdleMemory(log: (line: string) => void): Promise<string> {
  const results: IdleResult[] = [];
  for (const mode of ['store', 'receiver']) {
    log(`  ${mode}…`);
    results.push(await runChild<IdleResult>(['idle-memory', mode, String(IDLE_CONVERSATIONS)], ['--expose-gc']));
  }
  const [store, receiver] = results as [IdleResult, IdleResult];
  const kb = (bytes: number) => formatNumber(bytes / 1024, 2);
  return [
    `## Memory per live idle conversation (${formatNumber(IDLE_CONVERSATIONS)} conversations after one shopping-list turn each, heapUsed after gc)`,
    '',
    table(
      ['holder', 'heap before MB', 'heap after MB', 'bytes/conversation', 'fill time s'],
      [
        ['MemoryConversationStore, record alone (baseline)', store],
        ['Receiver.query(multiround: true), memory store', receiver],
      ].map(([name, result]) => {
        const value = result as IdleResult;
        return [
          name as string,
          formatNumber(value.heapBefore / 2 ** 20, 1),
          formatNumber(value.heapAfter / 2 ** 20, 1),
          formatNumber(value.bytesPerConversation),
          formatNumber(value.seconds, 1),
        ];
      }),
    ),
    '',
    table(
      ['figure', 'value', 'target'],
      [
        ['KB per conversation through the Receiver', kb(receiver.bytesPerConversation), '≤ 2 KB'],
        [
          'receiver/store (what a turn keeps beyond the record)',
          formatNumber(receiver.bytesPerConversation / store.bytesPerConversation, 2),
          '—',
        ],
      ],
    ),
  ].join('\n');
}

type StartupResult = { documents: number; startMs: number; readyMs: number };

/** A valid protocol document of about the size of the root agent's, distinct per index. */
function generatedDocument(index: number): string {
  return [
    '---',
    `name: Generated protocol ${index}`,
    `description: A generated protocol number ${index}, for the start-up benchmark.`,
    `multiround: ${index % 2 === 0}`,
    '---',
    '',
    `Each turn the sender sends JSON \`{"query": string, "limit"?: integer}\` about topic ${index}.`,
    '',
    'The receiver replies JSON `{"results": [{"title": string, "score": number}], "total": integer}`, the results',
    'sorted by score, highest first, at most `limit` of them (default 10).',
    '',
    'Errors are replies too: `{"error": "Invalid format"}` when the body does not match.',
    '',
  ].join('\n');
}

async function documentFolder(count: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `agora-bench-startup-${count}-`));
  await mkdir(join(dir, 'protocols'));
  await Promise.all(
    Array.from({ length: count }, (_, index) =>
      writeFile(join(dir, 'protocols', `generated-${String(index).padStart(4, '0')}.md`), generatedDocument(index)),
    ),
  );
  return dir;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((x, y) => x - y);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

/** Receiver.start with 1,000 documents in `protocols/` against 10, median of 5 fresh processes each. */
async function benchStartup(log: (line: string) => void): Promise<string> {
  const sizes = [10, 1000];
  const runs = 5;
  const folders = await Promise.all(sizes.map(documentFolder));
  try {
    const results = new Map<number, StartupResult[]>(sizes.map((size) => [size, []]));
    for (let run = 0; run < runs; run++) {
      // Alternating sizes spreads the machine's noise over both.
      for (const [index, size] of sizes.entries()) {
        log(`  run ${run + 1}/${runs}, ${size} documents…`);
        results.get(size)!.push(await runChild<StartupResult>(['startup', folders[index]!, String(size)]));
      }
    }
    const medians = sizes.map((size) => ({
      size,
      start: median(results.get(size)!.map((result) => result.startMs)),
      ready: median(results.get(size)!.map((result) => result.readyMs)),
    }));
    const [small, large] = medians as [(typeof medians)[0], (typeof medians)[0]];
    return [
      `## Receiver start-up with 1,000 documents in protocols/ vs 10 (median of ${runs} fresh processes each)`,
      '',
      table(
        ['documents', 'Receiver.start ms', 'process ready ms (incl. Node + tsx)'],
        medians.map((row) => [formatNumber(row.size), formatNumber(row.start, 1), formatNumber(row.ready, 0)]),
      ),
      '',
      table(
        ['ratio', 'value', 'target'],
        [
          ['1000/10, Receiver.start', formatNumber(large.start / small.start, 2), '≤ 2'],
          ['1000/10, process ready', formatNumber(large.ready / small.ready, 2), '—'],
        ],
      ),
    ].join('\n');
  } finally {
    await Promise.all(folders.map((dir) => rm(dir, { recursive: true, force: true })));
  }
}

// --------------------------------------------------------------------------------------- child entries

function heapAfterGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** The record a shopping-list conversation holds after its first turn, as the Receiver stores it. */
function firstTurnRecord(now: number): ConversationRecord {
  return {
    id: nanoid(24),
    protocolHash: SHOPPING_HASH,
    createdAt: now,
    expiresAt: now + 300_000,
    turn: 1,
    state: { items: { tea: 1 } },
    history: [
      { role: 'peer', body: { action: 'add', item: 'tea' } },
      { role: 'agent', body: { items: [{ item: 'tea', quantity: 1 }], total: 1 } },
    ],
  };
}

async function childIdleMemory(mode: string, count: number): Promise<IdleResult> {
  const store = new MemoryConversationStore({ sweepIntervalMs: 0 });
  const receiver =
    mode === 'receiver' ? await Receiver.start({ dir: root, logger: silentLogger, watch: false, store }) : undefined;
  const query = { protocolHash: SHOPPING_HASH, multiround: true, body: FIRST_TURN };
  // Warm up (routine loaded, code compiled), then drop what the warm-up kept.
  if (receiver) {
    for (let index = 0; index < 100; index++) await receiver.query(query);
  } else {
    for (let index = 0; index < 100; index++) await store.create(firstTurnRecord(Date.now()));
  }
  const warm = await store.count();
  const heapBefore = heapAfterGc();
  const started = performance.now();
  const batch = 100;
  for (let done = 0; done < count; done += batch) {
    if (receiver) await Promise.all(Array.from({ length: batch }, () => receiver.query(query)));
    else await Promise.all(Array.from({ length: batch }, () => store.create(firstTurnRecord(Date.now()))));
  }
  const seconds = (performance.now() - started) / 1000;
  const heapAfter = heapAfterGc();
  const live = (await store.count()) - warm;
  if (live !== count) throw new Error(`expected ${count} live conversations, found ${live}`);
  await receiver?.close();
  await store.close();
  return {
    mode,
    conversations: count,
    heapBefore,
    heapAfter,
    bytesPerConversation: (heapAfter - heapBefore) / count,
    seconds,
  };
}

async function childStartup(dir: string, expected: number): Promise<StartupResult> {
  const started = performance.now();
  const receiver = await Receiver.start({ dir, logger: silentLogger });
  const documents = receiver.registry.local().length;
  const ended = performance.now();
  if (documents !== expected)
    throw new Error(`expected ${expected} documents in ${dir}, the registry holds ${documents}`);
  await receiver.close();
  // performance.now() counts from the process's start, so `ended` is the whole time to a ready receiver.
  return { documents, startMs: ended - started, readyMs: ended };
}

if (process.argv[1] && resolve(process.argv[1]) === self && process.argv[2] === 'child') {
  const [kind, first, second] = process.argv.slice(3);
  const work =
    kind === 'idle-memory'
      ? childIdleMemory(first ?? 'store', Number(second ?? IDLE_CONVERSATIONS))
      : kind === 'startup'
        ? childStartup(first ?? '.', Number(second))
        : Promise.reject(new Error(`unknown child ${kind}`));
  work.then(
    (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
