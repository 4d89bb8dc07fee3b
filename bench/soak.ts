// `npm run bench:soak`: minutes of mixed traffic against one `agora serve` (Redis store when redis-server is
// installed), including the abuse pass's attacks and one Redis outage, printing the agent's RSS and open file
// descriptors at start and end, p99 latency, 5xx and crash counts. `-- --seconds 60` for a shorter run.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { hashText } from '../src/protocol/document.js';
import { encodeDataUri } from '../src/protocol/sources.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '180' } } });
const seconds = Number(values.seconds);
const root = fileURLToPath(new URL('..', import.meta.url));
const COUNTER =
  '---\nname: Counter\ndescription: Adds numbers over turns.\nmultiround: true\n---\nThe sender sends {"add": number}; the receiver replies {"total": number}.\n';
const ROUTINE =
  'export default (body: { add: number }, context: any) => { context.conversation.state.total = ((context.conversation.state.total as number) ?? 0) + Number(body.add); return { total: context.conversation.state.total }; };\n';

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

async function startRedis(port: number): Promise<ChildProcess | undefined> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const started = await new Promise<boolean>((resolve) => {
    let output = '';
    child.stdout!.on(
      'data',
      (chunk: Buffer) => (output += chunk) && output.includes('Ready to accept') && resolve(true),
    );
    child.once('error', () => resolve(false));
    child.once('exit', () => resolve(false));
  });
  child.stdout!.resume();
  return started ? child : undefined;
}

async function usage(pid: number): Promise<{ rssMb: number; fds: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  return { rssMb: Math.round(rss), fds: (await readdir(`/proc/${pid}/fd`)).length };
}

const dir = await mkdtemp(join(tmpdir(), 'agora-soak-'));
await mkdir(join(dir, 'protocols'));
await mkdir(join(dir, 'routines'));
await writeFile(join(dir, 'protocols/counter.md'), COUNTER);
await writeFile(join(dir, 'routines/counter.ts'), ROUTINE);
const redisPort = await freePort();
let redis = await startRedis(redisPort);
const port = await freePort();
const store = redis ? `redis://127.0.0.1:${redisPort}/0` : 'memory';
let crashes = 0;
let agent: ChildProcess;
const startAgent = async () => {
  agent = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(root, 'src/cli/main.ts'),
      'serve',
      dir,
      '--port',
      String(port),
      '--store',
      store,
      '--max-conversations',
      '2000',
      '--log-level',
      'error',
    ],
    {
      env: { ...process.env, ANTHROPIC_API_KEY: '' },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let output = '';
  await new Promise<void>((resolve) =>
    agent.stdout!.on('data', (chunk: Buffer) => (output += chunk) && output.includes('listening on') && resolve()),
  );
  agent.stdout!.resume();
  agent.once('exit', (code, signal) => {
    if (!stopping) {
      crashes += 1;
      process.stderr.write(`soak: agent exited (${code ?? signal}); restarting\n`);
      void startAgent();
    }
  });
};
let stopping = false;
await startAgent();
const base = `http://127.0.0.1:${port}`;
const hash = hashText(COUNTER);
const start = await usage(agent!.pid!);

const latencies: number[] = [];
const statuses = new Map<number, number>();
async function request(path: string, init: RequestInit = {}): Promise<unknown> {
  const began = performance.now();
  try {
    const response = await fetch(base + path, {
      ...init,
      headers: { 'content-type': 'application/json', ...init.headers },
    });
    const text = await response.text();
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    latencies.push(performance.now() - began);
    return response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text;
  } catch {
    statuses.set(0, (statuses.get(0) ?? 0) + 1);
    return undefined;
  }
}
const post = (path: string, body: unknown) =>
  request(path, {
    method: 'POST',
    body: typeof body === 'string' || body instanceof Uint8Array ? (body as string) : JSON.stringify(body),
  });

// Each kind of traffic, weighted: mostly normal use, a steady trickle of every attack.
let sequence = 0;
const traffic: [number, () => Promise<unknown>][] = [
  [40, () => post('/', { protocolHash: hash, body: { add: 1 } })],
  [
    20,
    async () => {
      const first = (await post('/', { protocolHash: hash, body: { add: 1 }, multiround: true })) as
        { conversationId?: string } | undefined;
      if (!first?.conversationId) return;
      for (let turn = 0; turn < 3; turn++)
        await post(`/conversations/${first.conversationId}`, { body: { add: turn } });
      await request(`/conversations/${first.conversationId}`, { method: 'DELETE' });
    },
  ],
  [5, () => request('/wellknown')],
  [3, () => post('/', 'x'.repeat(2 * 1024 * 1024))],
  [3, () => post('/', Buffer.from([0x7b, 0x22, 0x62, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]))],
  [
    3,
    () => {
      // A YAML double-quoted name carrying a real newline and a forged log line, 2 KB long.
      const text = `---\nname: "Legit\\n${new Date().toISOString()} agora error FORGED ${sequence++}${'N'.repeat(2000)}"\ndescription: x\nmultiround: false\n---\nx\n`;
      return post('/', { protocolHash: hashText(text), protocolSources: [encodeDataUri(text)], body: {} });
    },
  ],
  [
    2,
    () =>
      post('/', {
        protocolHash: 'a'.repeat(40),
        protocolSources: Array.from({ length: 1000 }, (_, index) => `http://10.0.0.${index % 250}/d`),
        body: {},
      }),
  ],
  [2, () => post('/', { body: 'natural language without an LLM' })],
  [2, () => post('/conversations/does-not-exist', { body: 1 })],
];
const weights = traffic.reduce((sum, [weight]) => sum + weight, 0);
const pick = () => {
  let roll = Math.random() * weights;
  for (const [weight, run] of traffic) if ((roll -= weight) < 0) return run;
  return traffic[0]![1];
};

const deadline = Date.now() + seconds * 1000;
let outage: Promise<void> | undefined;
const workers = Array.from({ length: 16 }, async () => {
  while (Date.now() < deadline) {
    // One Redis outage of 10 s at a third of the run: the only time 5xx are expected.
    if (redis && !outage && Date.now() > deadline - (seconds * 2000) / 3) {
      outage = (async () => {
        process.stderr.write('soak: stopping Redis for 10 s\n');
        redis!.kill('SIGKILL');
        await new Promise((resolve) => setTimeout(resolve, 10_000));
        redis = await startRedis(redisPort);
        process.stderr.write('soak: Redis back\n');
      })();
    }
    await pick()();
  }
});
await Promise.all(workers);
await outage;
const end = await usage(agent!.pid!);
stopping = true;
agent!.kill('SIGTERM');
await once(agent!, 'exit');
redis?.kill('SIGKILL');
await rm(dir, { recursive: true, force: true });

latencies.sort((a, b) => a - b);
const p = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]?.toFixed(1);
const fivexx = [...statuses].filter(([status]) => status >= 500).reduce((sum, [, count]) => sum + count, 0);
process.stdout.write(
  [
    `## Soak (${seconds} s, 16 clients, store: ${redis ? 'Redis, one 10 s outage' : 'memory'})`,
    '',
    '| measure | start | end |',
    '|---|---|---|',
    `| agent RSS (MB) | ${start.rssMb} | ${end.rssMb} |`,
    `| agent open fds | ${start.fds} | ${end.fds} |`,
    '',
    `requests: ${latencies.length}; p50 ${p(0.5)} ms, p99 ${p(0.99)} ms; 5xx: ${fivexx}; crashes: ${crashes}`,
    `statuses: ${[...statuses]
      .sort(([a], [b]) => a - b)
      .map(([status, count]) => `${status}×${count}`)
      .join(', ')}`,
    '',
  ].join('\n'),
);
