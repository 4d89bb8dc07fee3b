import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const root = fileURLToPath(new URL('..', import.meta.url));

/** A server process started for a benchmark. */
export type BenchServer = { url: string; port: number; child: ChildProcess; stop(): Promise<void> };

/**
 * Starts an entry in its own process (JavaScript with plain node, TypeScript with tsx) and waits for its `PORT n`
 * line (or `listening on http://…:n`, as `agora serve` says it); its stderr goes to ours, or to the file `stderr`
 * names (a log file, as a process manager would keep it). A `script` that is an absolute path is run as it is.
 */
export function startProcess(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
  stderr?: string,
): Promise<BenchServer> {
  return new Promise((resolve, reject) => {
    const loader = /\.[cm]?js$/.test(script) ? [] : ['--import', 'tsx'];
    const log = stderr === undefined ? 'inherit' : openSync(stderr, 'a');
    const child = spawn(process.execPath, [...loader, isAbsolute(script) ? script : `${root}${script}`, ...args], {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', log],
    });
    if (typeof log === 'number') closeSync(log);
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /(?:PORT|listening on http:\/\/[^:]+:)\s*(\d+)/.exec(output);
      if (match) {
        const port = Number(match[1]);
        resolve({
          url: `http://127.0.0.1:${port}`,
          port,
          child,
          stop: () =>
            new Promise((done) => {
              if (child.exitCode !== null) return done();
              child.once('close', () => done());
              child.kill('SIGTERM');
              setTimeout(() => child.kill('SIGKILL'), 5000).unref();
            }),
        });
      }
    });
    child.on('close', (code) => reject(new Error(`${script} ${args.join(' ')} exited with ${code}: ${output}`)));
  });
}

/** One load-test result. */
export type LoadResult = {
  name: string;
  requestsPerSecond: number;
  p99: number;
  p50: number;
  errors: number;
  non2xx: number;
};

/**
 * What one load test sends: a JSON body, POSTed to one path or to `paths` in turn; with `pipelining`, that many
 * requests written at once on each connection (HTTP/1.1 pipelining: the load generator's and the kernel's share of
 * each request shrinks, so more of the machine's cores are left to the server).
 */
export type LoadOptions = {
  url: string;
  path?: string;
  paths?: string[];
  body: string;
  duration: number;
  connections?: number;
  headers?: Record<string, string>;
  pipelining?: number;
};

/** The load generator: wrk when installed (C, so the client takes less of the shared cores), else autocannon. */
export function loadGenerator(): 'wrk' | 'autocannon' {
  if (process.env.AGORA_BENCH_LOADGEN === 'autocannon') return 'autocannon';
  return spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error ? 'autocannon' : 'wrk';
}

function luaString(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

async function wrkLoad(name: string, options: LoadOptions): Promise<LoadResult> {
  const paths = options.paths ?? [options.path ?? '/'];
  const script = join(tmpdir(), `agora-bench-${process.pid}-${Math.random().toString(36).slice(2)}.lua`);
  await writeFile(
    script,
    [
      `local body = ${luaString(options.body)}`,
      `local paths = { ${paths.map(luaString).join(', ')} }`,
      'local counter = 0',
      `local depth = ${Math.max(1, Math.floor(options.pipelining ?? 1))}`,
      'local one = function()',
      '  counter = counter + 1',
      `  return wrk.format("POST", paths[(counter % #paths) + 1], { ["Content-Type"] = "application/json"${Object.entries(
        options.headers ?? {},
      )
        .map(([name, value]) => `, [${luaString(name)}] = ${luaString(value)}`)
        .join('')} }, body)`,
      'end',
      'request = function()',
      '  if depth == 1 then return one() end',
      '  local batch = {}',
      '  for i = 1, depth do batch[i] = one() end',
      '  return table.concat(batch)',
      'end',
      'done = function(summary, latency, requests)',
      '  io.write(string.format("AGORA %d %d %d %d %d %d\\n", summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, summary.errors.status))',
      'end',
    ].join('\n'),
  );
  try {
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn(
        'wrk',
        ['-t1', `-c${options.connections ?? 50}`, `-d${options.duration}s`, '--latency', '-s', script, options.url],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      let text = '';
      child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.on('error', reject);
      child.on('close', () => resolve(text));
    });
    const match = /AGORA (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)/.exec(output);
    if (!match) throw new Error(`wrk printed no summary: ${output}`);
    const [requests, durationUs, p50Us, p99Us, errors, non2xx] = match.slice(1).map(Number) as [
      number,
      number,
      number,
      number,
      number,
      number,
    ];
    return {
      name,
      requestsPerSecond: requests / (durationUs / 1e6),
      p50: Math.round(p50Us / 100) / 10,
      p99: Math.round(p99Us / 100) / 10,
      errors,
      non2xx,
    };
  } finally {
    await rm(script, { force: true });
  }
}

/** Runs a load test (wrk, else autocannon) and returns req/s and latency (ms). */
export async function load(name: string, options: LoadOptions): Promise<LoadResult> {
  if (loadGenerator() === 'wrk') return wrkLoad(name, options);
  const paths = options.paths;
  let next = 0;
  const result = await autocannon({
    url: `${options.url}${options.path ?? '/'}`,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...options.headers },
    connections: options.connections ?? 50,
    pipelining: options.pipelining ?? 1,
    duration: options.duration,
    body: options.body,
    ...(paths
      ? {
          requests: [
            {
              method: 'POST',
              body: options.body,
              setupRequest: (request: autocannon.Request) => ({ ...request, path: paths[next++ % paths.length] }),
            },
          ],
        }
      : {}),
  });
  return {
    name,
    requestsPerSecond: result.requests.average,
    p99: result.latency.p99,
    p50: result.latency.p50,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

/** One load of an alternating run: what {@link load} takes, a name, and the server's process id (for its CPU time). */
export type AlternatingLoad = Omit<LoadOptions, 'duration'> & {
  name: string;
  pid?: number;
  cpuSeconds?: () => number | undefined;
};

/**
 * An alternating run's outcome for one load: its best round, every round, its server's CPU time per request, and the
 * whole machine's (every process and the kernel: the load generator and Redis included) with how busy it kept the
 * machine's cores, both from the round with the most requests per second.
 */
export type AlternatingResult = LoadResult & {
  rounds: LoadResult[];
  cpuMicrosPerRequest?: number;
  machineMicrosPerRequest?: number;
  machineBusy?: number;
};

const CLOCK_TICKS_PER_SECOND = 100;

/** CPU seconds a process has used (user + system), from /proc on Linux; undefined elsewhere. */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** The machine's CPU seconds, busy and idle, summed over its cores, from /proc/stat on Linux; undefined elsewhere. */
export function machineCpuSeconds(): { busy: number; idle: number } | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal (guest time is already counted in user).
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = fields;
    return {
      busy: (user + nice + system + irq + softirq + steal) / CLOCK_TICKS_PER_SECOND,
      idle: (idle + iowait) / CLOCK_TICKS_PER_SECOND,
    };
  } catch {
    return undefined;
  }
}

/** CPU seconds a process and all its descendants (a cluster's workers) have used, from /proc on Linux. */
export function treeCpuSeconds(pid: number): number | undefined {
  const own = processCpuSeconds(pid);
  if (own === undefined) return undefined;
  let children: string[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch {
    return own;
  }
  return children.reduce((sum, child) => sum + (treeCpuSeconds(Number(child)) ?? 0), own);
}

/**
 * The host is shared and its speed swings within seconds, so one load per server would compare a quiet moment with
 * a busy one. Instead every load runs `rounds` times, in turns (a, b, c, then c, b, a…): each keeps its best round (the
 * nearest to what the server can do when the machine lets it), every round (to compare neighbours, see
 * {@link pairedRatio}) and the CPU time its server process spent per request, lowest of its rounds.
 */
export async function alternating(
  loads: AlternatingLoad[],
  rounds: number,
  seconds: number,
  log: (line: string) => void = () => {},
): Promise<AlternatingResult[]> {
  const results: AlternatingResult[] = [];
  for (let round = 1; round <= rounds; round++) {
    log(`  round ${round} of ${rounds}…`);
    // Every other round in the reverse order, so that no load always follows the same other one.
    const order = [...loads.entries()];
    if (round % 2 === 0) order.reverse();
    for (const [index, { name, pid, cpuSeconds, ...options }] of order) {
      const cpuOf = cpuSeconds ?? (() => (pid === undefined ? undefined : processCpuSeconds(pid)));
      const before = cpuOf();
      const machineBefore = machineCpuSeconds();
      const result = await load(name, { ...options, duration: seconds });
      const after = cpuOf();
      const machineAfter = machineCpuSeconds();
      const requests = result.requestsPerSecond * seconds;
      const cpu =
        before !== undefined && after !== undefined && requests > 0 ? ((after - before) * 1e6) / requests : undefined;
      const machine =
        machineBefore && machineAfter && requests > 0
          ? {
              machineMicrosPerRequest: ((machineAfter.busy - machineBefore.busy) * 1e6) / requests,
              machineBusy:
                (machineAfter.busy - machineBefore.busy) /
                (machineAfter.busy - machineBefore.busy + machineAfter.idle - machineBefore.idle),
            }
          : {};
      const kept = results[index];
      if (kept === undefined) {
        results[index] = {
          ...result,
          rounds: [result],
          ...(cpu !== undefined ? { cpuMicrosPerRequest: cpu } : {}),
          ...machine,
        };
        continue;
      }
      kept.rounds.push(result);
      if (cpu !== undefined && (kept.cpuMicrosPerRequest === undefined || cpu < kept.cpuMicrosPerRequest))
        kept.cpuMicrosPerRequest = cpu;
      if (result.requestsPerSecond > kept.requestsPerSecond) Object.assign(kept, result, machine);
    }
  }
  return results;
}

/**
 * The median over rounds of `subject / baseline`, each round's pair measured seconds apart (neighbours in the
 * turn order): steadier than a ratio of two bests, which can pair a baseline's quiet moment with a busy one.
 */
export function pairedRatio(subject: AlternatingResult, baseline: AlternatingResult): number {
  return median(
    subject.rounds.map((round, index) => round.requestsPerSecond / baseline.rounds[index]!.requestsPerSecond),
  );
}

/** The median of some numbers. */
export function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Formats rows as an aligned Markdown table. */
export function table(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((row) => row.map(String))];
  const widths = header.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)));
  const line = (row: string[]) => `| ${row.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  return [
    line(cells[0]!),
    `|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`,
    ...cells.slice(1).map(line),
  ].join('\n');
}

/** Formats a number with thousands separators. */
/** The table of load results side by side: rate, latencies, errors and the server's CPU per request when measured. */
export function resultsTable(results: readonly AlternatingResult[]): string {
  return table(
    ['endpoint', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'server CPU µs/request'],
    results.map((result) => [
      result.name,
      formatNumber(result.requestsPerSecond),
      result.p50,
      result.p99,
      result.errors + result.non2xx,
      result.cpuMicrosPerRequest === undefined ? '—' : formatNumber(result.cpuMicrosPerRequest, 1),
    ]),
  );
}

export function formatNumber(value: number, digits = 0): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/**
 * The environment `agora serve` is started with in the benches, as a user's defaults: no LLM key and no variable that
 * would change the defaults (the request log, tracing) left over from the shell.
 */
export const DEFAULTS_ENV: Readonly<Record<string, string>> = Object.fromEntries(
  [
    'ANTHROPIC_API_KEY',
    'ANTHROPIC_AUTH_TOKEN',
    'OPENAI_API_KEY',
    'AGORA_QUIET_REQUESTS',
    'AGORA_LOG_LEVEL',
    'AGORA_LOG_FORMAT',
    'AGORA_LOG_SAMPLE',
    'OTEL_EXPORTER_OTLP_ENDPOINT',
    'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    'OTEL_EXPORTER_OTLP_PROTOCOL',
    'OTEL_TRACES_SAMPLER',
    'OTEL_TRACES_SAMPLER_ARG',
  ].map((name) => [name, '']),
);
