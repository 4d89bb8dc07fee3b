// Benchmarks of issue 33 (agent side): how the cost of each kind of work grows with its size. Not timed tests: the
// figures vary with the machine (and whatever else shares its cores); the shapes and the same-run ratios matter.
//
// `npm run bench -- --only growth`. Three parts, one run:
// - protocols: an agent with 10, 1,000, 10,000 and 50,000 documents in protocols/ (the offline LLM, so every one is
//   listed), in its own process under `ulimit -n 4096`: start to /health, a new .md served in /wellknown, the worst
//   /health wait while the change (and a whole rescan) is handled, /wellknown p50, every document listed after it;
// - capacity: new conversations/s with --max-conversations against without, at 200,000 live (same run, alternated);
// - expiry: 500,000 conversations expiring at once in a fresh process: the longest pause, and memory before, with
//   them live, after expiry (tombstones held) and after the tombstone period.
// This file is also the entry of the expiry child (`node --import tsx bench/growth.ts child expiry …`); the agent child
// is bench/_growth-agent.mjs, on the compiled build.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryConversationStore } from '../src/conversation/store.js';
import { silentLogger } from '../src/log.js';
import { hashText } from '../src/protocol/document.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const self = fileURLToPath(import.meta.url);
const doc = (name: string) =>
  `---\nname: ${name}\ndescription: The ${name} protocol, one of many.\nmultiround: false\n---\nSend a JSON object with a field "q"; the reply is {"a": "…"}. (${name})\n`;

type Log = (line: string) => void;

// ------------------------------------------------------------------------------------------------ HTTP helpers

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

/**
 * A GET: status, bytes, ETag, and the time to its last byte (ms). A timed sample (`timed`) counts the bytes and drops
 * them: joining 6 MB in this client (and collecting it) would be timed as the server's.
 */
function get(
  url: string,
  headers: Record<string, string> = {},
  timed = false,
): Promise<{ status: number; body: Buffer; length: number; etag?: string; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { agent, headers }, (response) => {
      const chunks: Buffer[] = [];
      let length = 0;
      response.on('data', (chunk: Buffer) => {
        length += chunk.length;
        if (!timed) chunks.push(chunk);
      });
      response.on('end', () => {
        const ms = performance.now() - started;
        resolve({
          status: response.statusCode ?? 0,
          body: Buffer.concat(chunks),
          length,
          ...(response.headers.etag ? { etag: response.headers.etag } : {}),
          ms,
        });
      });
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end();
  });
}

// The prober of /health, in its own process: the bench's own work (polling and reading a 6 MB /wellknown) must not
// stretch the waits it measures. It sends /health one request after another until its stdin closes, then prints
// the longest wait and the count.
const PROBER = `
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
let running = true, worst = 0, requests = 0;
process.stdin.on('end', () => (running = false)).resume();
const once = () => new Promise((resolve) => {
  const started = performance.now();
  const done = () => resolve(performance.now() - started);
  http.get(process.argv[1] + '/health', { agent }, (response) => response.resume().on('end', done)).on('error', () => resolve(Infinity));
});
(async () => {
  await once();
  process.stdout.write('R');
  while (running) { worst = Math.max(worst, await once()); requests += 1; }
  process.stdout.write(JSON.stringify({ worstMs: worst, requests }));
  process.exit(0);
})();
`;

/** Starts the /health prober (resolves once it is probing); `stop()` ends it and gives the longest wait it saw. */
async function probe(url: string): Promise<{ stop(): Promise<{ worstMs: number; requests: number }> }> {
  const child = spawn(process.execPath, ['-e', PROBER, url], { stdio: ['pipe', 'pipe', 'inherit'] });
  let output = '';
  let ready!: () => void;
  const probing = new Promise<void>((resolve) => (ready = resolve));
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    if (output.startsWith('R')) ready();
  });
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  await probing;
  return {
    async stop() {
      child.stdin!.end();
      await closed;
      return JSON.parse(output.slice(1)) as { worstMs: number; requests: number };
    },
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
const ms = (value: number) =>
  value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${value.toFixed(value < 10 ? 1 : 0)} ms`;
const bytes = (value: number) =>
  value >= 1024 * 1024 ? `${(value / 1024 / 1024).toFixed(1)} MB` : `${(value / 1024).toFixed(1)} KB`;
const count = (value: number) => value.toLocaleString('en-US');
const table = (header: string[], rows: string[][]) =>
  [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ].join('\n');

// The baseline of /wellknown: a bare node:http server in its own process answering every request with a ready
// buffer of the same size, read by the same client in the same run (what moving those bytes over loopback costs).
const BARE = `
const http = require('node:http');
const body = Buffer.alloc(Number(process.argv[1]), 'a');
const server = http.createServer((request, response) => {
  response.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
  response.end(body);
});
server.listen(0, '127.0.0.1', () => process.stdout.write('PORT ' + server.address().port + '\\n'));
`;

/** p50 of `rounds` GETs of a bare node:http server answering `size` bytes. */
async function bareP50(size: number, rounds: number): Promise<number> {
  const child = spawn(process.execPath, ['-e', BARE, String(size)], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<string>((resolve, reject) => {
      let output = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const found = /PORT (\d+)/.exec(output)?.[1];
        if (found) resolve(found);
      });
      child.on('close', (code) => reject(new Error(`bare server exited with ${code}`)));
    });
    const samples: number[] = [];
    await get(`http://127.0.0.1:${port}/`);
    for (let round = 0; round < rounds; round += 1) samples.push((await get(`http://127.0.0.1:${port}/`, {}, true)).ms);
    return median(samples);
  } finally {
    child.kill();
  }
}

// ------------------------------------------------------------------------------------------------ protocols

/** Starts the agent child under `ulimit -n 4096`; resolves once it printed its port, with the time since spawn. */
function startAgentChild(
  dir: string,
): Promise<{ child: ChildProcess; url: string; lines: string[]; spawnedAt: number }> {
  const spawnedAt = performance.now();
  const agentScript = join(root, 'bench/_growth-agent.mjs');
  const child = spawn('bash', ['-c', `ulimit -n 4096 && exec "${process.execPath}" "${agentScript}" "${dir}"`], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: string[] = [];
  return new Promise((resolve, reject) => {
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      for (const line of parts) {
        lines.push(line);
        const port = /^PORT (\d+)$/.exec(line)?.[1];
        if (port) resolve({ child, url: `http://127.0.0.1:${port}`, lines, spawnedAt });
      }
    });
    child.on('close', (code) => reject(new Error(`agent child exited with ${code}`)));
  });
}

async function until<T>(check: () => Promise<T | undefined>, timeoutMs: number): Promise<T | undefined> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return undefined;
}

type ProtocolRow = {
  size: number;
  startMs: number;
  loadedMs: number;
  newServedMs: number | undefined;
  worstChangeMs: number;
  worstRescanMs: number;
  listedAfter: number;
  wellknownBytes: number;
  wellknownP50: number;
  bareP50: number;
  wellknownGzip: number;
  gzipP50: number;
  notModifiedP50: number;
};

async function measureProtocols(size: number, log: Log): Promise<ProtocolRow> {
  const dir = await mkdtemp(join(tmpdir(), `agora-growth-${size}-`));
  try {
    await mkdir(join(dir, 'protocols'));
    for (let index = 0; index < size; index += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, size - index) }, (_, offset) =>
          writeFile(join(dir, 'protocols', `p${index + offset}.md`), doc(`p${index + offset}`)),
        ),
      );
    }
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: `growth-${size}` }));
    log(`  ${count(size)} documents: starting…`);
    const { child, url, lines, spawnedAt } = await startAgentChild(dir);
    try {
      await until(async () => ((await get(`${url}/health`)).status === 200 ? true : undefined), 120_000);
      const startMs = performance.now() - spawnedAt;
      await until(async () => (lines.includes('LOADED') ? true : undefined), 120_000);
      const loadedMs = performance.now() - spawnedAt;
      // /wellknown, whole and uncompressed (what the issue measured), then revalidated (304) and gzip.
      const first = await get(`${url}/wellknown`);
      const samples: number[] = [];
      const rounds = size >= 10_000 ? 20 : 100;
      for (let round = 0; round < rounds; round += 1) samples.push((await get(`${url}/wellknown`, {}, true)).ms);
      const bare = await bareP50(first.body.length, rounds);
      const notModified: number[] = [];
      for (let round = 0; round < rounds; round += 1)
        notModified.push((await get(`${url}/wellknown`, { 'if-none-match': first.etag ?? '' }, true)).ms);
      const gzip = await get(`${url}/wellknown`, { 'accept-encoding': 'gzip' });
      const gzipped: number[] = [];
      for (let round = 0; round < rounds; round += 1)
        gzipped.push((await get(`${url}/wellknown`, { 'accept-encoding': 'gzip' }, true)).ms);
      // A new document: from its write to its hash in /wellknown, /health probed all along.
      log(`  ${count(size)} documents: a new .md…`);
      const added = doc(`added-${size}`);
      const addedHash = hashText(added);
      const changeProbe = await probe(url);
      const written = performance.now();
      await writeFile(join(dir, 'protocols', 'added.md'), added);
      let etag = first.etag ?? '';
      const served = await until(async () => {
        const response = await get(`${url}/wellknown`, { 'if-none-match': etag });
        if (response.status !== 200) return undefined;
        etag = response.etag ?? '';
        return response.body.includes(addedHash) ? performance.now() - written : undefined;
      }, 20_000);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const change = await changeProbe.stop();
      // A whole rescan (what a lost watch event causes), then every document must still be listed.
      log(`  ${count(size)} documents: a whole rescan…`);
      const rescanProbe = await probe(url);
      const before = lines.length;
      child.kill('SIGUSR2');
      await until(async () => (lines.slice(before).includes('SCANNED') ? true : undefined), 120_000);
      await get(`${url}/wellknown`);
      const rescan = await rescanProbe.stop();
      const listedAfter = Object.keys(JSON.parse((await get(`${url}/wellknown`)).body.toString()) as object).length;
      return {
        size,
        startMs,
        loadedMs,
        newServedMs: served,
        worstChangeMs: change.worstMs,
        worstRescanMs: rescan.worstMs,
        listedAfter,
        wellknownBytes: first.body.length,
        wellknownP50: median(samples),
        bareP50: bare,
        wellknownGzip: gzip.body.length,
        gzipP50: median(gzipped),
        notModifiedP50: median(notModified),
      };
    } finally {
      child.kill('SIGTERM');
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function benchProtocols(log: Log): Promise<string> {
  const rows: ProtocolRow[] = [];
  for (const size of [10, 1000, 10_000, 50_000]) rows.push(await measureProtocols(size, log));
  return [
    '### protocols/ at 10 to 50,000 documents (agent child on the build under `ulimit -n 4096`, offline LLM: every document listed)',
    '',
    table(
      [
        'documents',
        'start to /health',
        'start to every document read',
        'new .md in /wellknown',
        'worst /health during it',
        'worst /health during a whole rescan',
        'listed after',
        '/wellknown whole (p50)',
        'bare node:http, same bytes (p50; ours ÷ bare)',
        'gzip (p50)',
        'revalidated: 304 (p50)',
      ],
      rows.map((row) => [
        count(row.size),
        ms(row.startMs),
        ms(row.loadedMs),
        row.newServedMs === undefined ? 'never (20 s)' : ms(row.newServedMs),
        ms(row.worstChangeMs),
        ms(row.worstRescanMs),
        `${count(row.listedAfter)} of ${count(row.size + 1)}`,
        `${bytes(row.wellknownBytes)}, ${ms(row.wellknownP50)}`,
        `${ms(row.bareP50)} (${(row.wellknownP50 / row.bareP50).toFixed(2)}×)`,
        `${bytes(row.wellknownGzip)}, ${ms(row.gzipP50)}`,
        ms(row.notModifiedP50),
      ]),
    ),
    '',
    'Targets: a new document served in under 1 s (a file is read once unchanged for 500 ms), no /health wait over 50 ms during a change, every document listed after a change at 50,000, /wellknown p50 under 5 ms at 50,000 (the bare node:http column is what moving the same bytes costs on this machine in this run).',
  ].join('\n');
}

// ------------------------------------------------------------------------------------------------ capacity

export async function benchCapacity(log: Log): Promise<string> {
  const { Receiver } = await import('../src/receiver.js');
  const { InMemoryMemory } = await import('../src/memory/file.js');
  const live = 200_000;
  const shopping = hashText(
    await import('node:fs/promises').then(({ readFile }) => readFile(join(root, 'protocols/shopping-list.md'))),
  );
  const make = async (maxConversations: number | undefined) => {
    const receiver = await Receiver.start({
      dir: root,
      llm: null,
      watch: false,
      logger: silentLogger,
      memory: new InMemoryMemory(),
      ...(maxConversations ? { maxConversations } : {}),
    });
    const now = Date.now();
    for (let index = 0; index < live; index += 1) {
      await receiver.store.create({
        id: `live-${index}`,
        protocolHash: shopping,
        createdAt: now,
        expiresAt: now + 300_000,
        turn: 1,
        state: { items: ['tea'] },
        history: [],
      });
    }
    return receiver;
  };
  log(`  capacity: ${count(live)} live conversations in two receivers…`);
  const capped = await make(10_000_000);
  const uncapped = await make(undefined);
  const run = async (receiver: Awaited<ReturnType<typeof make>>, total: number) => {
    const started = performance.now();
    let sent = 0;
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (sent < total) {
          sent += 1;
          await receiver.query({ protocolHash: shopping, body: { action: 'add', item: 'tea' }, multiround: true });
        }
      }),
    );
    return total / ((performance.now() - started) / 1000);
  };
  const rates = { capped: [] as number[], uncapped: [] as number[] };
  for (let round = 0; round < 6; round += 1) {
    // Which goes first alternates, so the garbage one run leaves is collected in the other's as often as not.
    if (round % 2 === 0) {
      rates.uncapped.push(await run(uncapped, 10_000));
      rates.capped.push(await run(capped, 10_000));
    } else {
      rates.capped.push(await run(capped, 10_000));
      rates.uncapped.push(await run(uncapped, 10_000));
    }
  }
  const countedLive = await capped.store.count();
  await capped.close();
  await uncapped.close();
  const ratio = median(rates.capped) / median(rates.uncapped);
  return [
    `### New conversations/s at ${count(live)} live (in process, 50 concurrent first turns, 6 rounds of 10,000 each in alternating order, median)`,
    '',
    table(
      ['', 'new conversations/s', 'vs without the cap'],
      [
        ['without --max-conversations', count(Math.round(median(rates.uncapped))), '1.00×'],
        [
          'with --max-conversations (reserved against the counter)',
          count(Math.round(median(rates.capped))),
          `${ratio.toFixed(2)}×`,
        ],
      ],
    ),
    '',
    `Live at the end (capped receiver): ${count(countedLive)}. Target: within 20% (≥ 0.80×).`,
  ].join('\n');
}

// ------------------------------------------------------------------------------------------------ expiry

type ExpiryResult = {
  count: number;
  baseMb: number;
  liveMb: number;
  afterExpiryMb: number;
  afterTombstonesMb: number;
  sweepMs: number;
  longestPauseMs: number;
  p99PauseMs: number;
  slices: number;
  tombstoneBytes: number;
};

/** In a fresh process (child `expiry`): 500,000 conversations created, expired at once, swept while a timer watches the loop. */
async function expiryChild(total: number): Promise<ExpiryResult> {
  const collect = () => {
    (globalThis as { gc?: () => void }).gc?.();
    const usage = process.memoryUsage();
    return (usage.heapUsed + usage.arrayBuffers) / 1024 / 1024;
  };
  let time = 1_750_000_000_000;
  const ttl = 300_000;
  const store = new MemoryConversationStore({ now: () => time, tombstoneMs: ttl, sweepIntervalMs: 0 });
  // A running agent's sweeper has run before a burst comes (once a second): warm it on 2,000 earlier expiries.
  for (let index = 0; index < 2000; index += 1)
    await store.create({
      id: `warm-${index}`,
      protocolHash: null,
      createdAt: time,
      expiresAt: time + 1,
      turn: 1,
      state: {},
      history: [],
    });
  time += 2;
  await store.sweep();
  time += ttl + ttl / 8;
  await store.sweep();
  const baseMb = collect();
  for (let index = 0; index < total; index += 1) {
    await store.create({
      id: `${index.toString(36).padStart(8, '0')}abcdefghijklmnop`,
      protocolHash: 'ab'.repeat(20),
      createdAt: time,
      expiresAt: time + ttl - (index % 1000),
      turn: 1,
      state: { items: ['tea'] },
      history: [],
    });
  }
  const liveMb = collect();
  time += ttl;
  // The loop's longest stall while the sweep runs: the widest gap between two turns of a setImmediate ticker.
  let longestPauseMs = 0;
  let slices = 0;
  const gaps: number[] = [];
  let last = performance.now();
  let ticking = true;
  const tick = () => {
    const now = performance.now();
    longestPauseMs = Math.max(longestPauseMs, now - last);
    gaps.push(now - last);
    last = now;
    slices += 1;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const started = performance.now();
  const swept = await store.sweep();
  const sweepMs = performance.now() - started;
  ticking = false;
  if (swept !== total || (await store.count()) !== 0) throw new Error(`swept ${swept} of ${total}`);
  const tombstoneBytes = store.tombstones().bytes;
  const afterExpiryMb = collect();
  time += ttl + ttl / 8;
  await store.sweep();
  const afterTombstonesMb = collect();
  const p99PauseMs = [...gaps].sort((a, b) => a - b)[Math.floor(gaps.length * 0.99)] ?? 0;
  return {
    count: total,
    baseMb,
    liveMb,
    afterExpiryMb,
    afterTombstonesMb,
    sweepMs,
    longestPauseMs,
    p99PauseMs,
    slices,
    tombstoneBytes,
  };
}

function runChild<T>(args: string[]): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', self, 'child', ...args], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(output) as T) : reject(new Error(`child ${args.join(' ')} exited with ${code}`)),
    );
  });
}

async function benchExpiry(log: Log): Promise<string> {
  log('  expiry: 500,000 conversations in a fresh process…');
  const result = await runChild<ExpiryResult>(['expiry', '500000']);
  const mb = (value: number) => `${(Math.abs(value) < 0.05 ? 0 : value).toFixed(1)} MB`;
  return [
    `### Expiry of ${count(result.count)} conversations at once (memory store, fresh process, its sweep warmed on 2,000 earlier expiries; heap + array buffers after a full GC)`,
    '',
    table(
      [
        'sweep (all)',
        'longest pause',
        'p99 pause',
        'loop turns during it',
        'memory: empty store',
        `${count(result.count)} live`,
        'after expiry (tombstones held)',
        'after the tombstone period',
      ],
      [
        [
          ms(result.sweepMs),
          ms(result.longestPauseMs),
          ms(result.p99PauseMs),
          count(result.slices),
          mb(result.baseMb),
          mb(result.liveMb),
          `${mb(result.afterExpiryMb)} (tables ${bytes(result.tombstoneBytes)})`,
          mb(result.afterTombstonesMb),
        ],
      ],
    ),
    '',
    `Targets: no pause over 50 ms; memory after expiry within 20% of before. Live conversations took ${mb(result.liveMb - result.baseMb)}; after expiry ${mb(result.afterExpiryMb - result.baseMb)} above the empty store is held (${(((result.afterExpiryMb - result.baseMb) / (result.liveMb - result.baseMb)) * 100).toFixed(0)}% of the live set), ${mb(result.afterTombstonesMb - result.baseMb)} once the tombstones went.`,
  ].join('\n');
}

// ------------------------------------------------------------------------------------------------ entry

/** The growth section: its Markdown. */
export async function benchGrowth(log: Log): Promise<string> {
  const parts = [await benchProtocols(log), await benchCapacity(log), await benchExpiry(log)];
  return parts.join('\n\n');
}

if (process.argv[2] === 'child') {
  const [kind, argument] = process.argv.slice(3);
  if (kind === 'expiry') process.stdout.write(JSON.stringify(await expiryChild(Number(argument))));
}
