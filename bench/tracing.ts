// What tracing costs, on `agora serve DIR` as users start it (the CLI, its defaults, the request log to a file: the
// server of bench/http.ts's row (f), started the same way), loaded in alternating rounds in one run:
//   (a) untraced, and traced with every request sampled (OTLP/HTTP protobuf to a local sink that takes and drops what
//       it is sent): each one's server CPU per request, requests per second, and the traced/untraced ratios;
//   (b) the untraced server's CPU per request is tracing's off path: compare it with row (f) of `npm run bench:http`
//       run on a commit without tracing code, or name that commit's build in AGORA_BENCH_BASELINE_CLI (its
//       bin/agora.js) to load it here too, in the same rounds.
// Figures taken on a busy machine (load average over 3 at the start) are flagged: do not quote them.
// Usage: npm run bench:tracing [-- --seconds 5 --rounds 4]   (about a minute; AGORA_BENCH_CLI: another build to test)
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { hashText } from '../src/protocol/document.js';
import {
  alternating,
  DEFAULTS_ENV,
  formatNumber,
  pairedRatio,
  startProcess,
  table,
  type AlternatingLoad,
  type AlternatingResult,
  type BenchServer,
} from './_harness.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { seconds: { type: 'string' }, rounds: { type: 'string' } } });
const seconds = Number(values.seconds ?? 5);
const rounds = Number(values.rounds ?? 4);
/** The command users run (the build), as bench/http.ts loads it; AGORA_BENCH_CLI names another. */
const CLI = process.env.AGORA_BENCH_CLI ?? `${root}bin/agora.js`;
/** A build without tracing code (a checkout of an earlier commit, built), loaded as a third server when named. */
const BASELINE_CLI = process.env.AGORA_BENCH_BASELINE_CLI;
/** Requests sent to each server before the rounds. */
const WARM_UP_REQUESTS = 500;
/** Where the load average says the machine is too busy for figures worth quoting. */
const BUSY = 3;

// As bench/http.ts starts `agora serve`: no LLM, no environment that would change the defaults; and no tracing but
// where asked for (an OTEL_* variable of the shell would trace the untraced server).
const QUIET_ENV = DEFAULTS_ENV;

/** An OTLP/HTTP sink: answers every export at once, counting the exports and their bytes. */
async function startSink(): Promise<{ url: string; exports: () => number; bytes: () => number; close(): void }> {
  let bytes = 0;
  let exports = 0;
  const server = createServer((request, response) => {
    request.on('data', (chunk: Buffer) => (bytes += chunk.length));
    request.on('end', () => {
      exports += 1;
      response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`,
    exports: () => exports,
    bytes: () => bytes,
    close: () => server.close(),
  };
}

const logs = mkdtempSync(join(tmpdir(), 'agora-bench-tracing-'));
const servers: BenchServer[] = [];
/** `agora serve DIR` from a build, its log to a file as a process manager keeps it. */
async function serve(name: string, cli: string, env: NodeJS.ProcessEnv = {}): Promise<BenchServer> {
  const server = await startProcess(
    cli,
    ['serve', root, '--port', '0', '--host', '127.0.0.1'],
    { ...QUIET_ENV, ...env },
    join(logs, `${name}.log`),
  );
  servers.push(server);
  return server;
}

const loadAtStart = loadavg()[0]!;
const sink = await startSink();
try {
  console.error(`load average ${loadAtStart.toFixed(2)}; starting the servers…`);
  const plain = await serve('untraced', CLI);
  // 100% sampled: every request is a root span, kept by the parent-based default; said here against the shell's.
  const traced = await serve('traced', CLI, {
    OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_TRACES_SAMPLER: 'parentbased_always_on',
    OTEL_SERVICE_NAME: 'bench',
  });
  const baseline = BASELINE_CLI === undefined ? undefined : await serve('baseline', BASELINE_CLI);

  const hash = hashText(readFileSync(`${root}protocols/unit-conversion.md`));
  const body = JSON.stringify({ protocolHash: hash, body: { value: 10, from: 'km', to: 'mi' } });
  // Each server answers, and is warmed (its code compiled, the tracing SDK's parts loaded) before any round counts.
  for (const server of [plain, traced, ...(baseline ? [baseline] : [])]) {
    const reply = (await (await fetch(`${server.url}/`, { method: 'POST', body })).json()) as { status: string };
    if (reply.status !== 'success') throw new Error(`bench query refused by ${server.url}: ${JSON.stringify(reply)}`);
    for (let request = 0; request < WARM_UP_REQUESTS; request++)
      await (await fetch(`${server.url}/`, { method: 'POST', body })).arrayBuffer();
  }
  const loads: AlternatingLoad[] = [
    { name: '`agora serve DIR`, untraced (tracing off)', url: plain.url, body, pid: plain.child.pid },
    {
      name: '`agora serve DIR`, traced (100% sampled, OTLP/HTTP protobuf)',
      url: traced.url,
      body,
      pid: traced.child.pid,
    },
  ];
  if (baseline)
    loads.push({ name: `\`agora serve DIR\`, ${BASELINE_CLI}`, url: baseline.url, body, pid: baseline.child.pid });
  const results = await alternating(loads, rounds, seconds, (line) => console.error(line));
  const [off, on, before] = results as [AlternatingResult, AlternatingResult, AlternatingResult | undefined];
  // The batch processor sends every 5 s: wait for the last batch before counting what was exported.
  await new Promise((resolve) => setTimeout(resolve, 5500));
  const loadAtEnd = loadavg()[0]!;

  const cpu = (result: AlternatingResult) =>
    result.cpuMicrosPerRequest === undefined ? '—' : formatNumber(result.cpuMicrosPerRequest, 1);
  console.log(
    table(
      ['server', 'server CPU µs/request (lowest round)', 'req/s (best round)', 'p50 ms'],
      results.map((result) => [result.name, cpu(result), formatNumber(result.requestsPerSecond), result.p50]),
    ),
  );
  const ratio = (a: number | undefined, b: number | undefined) => (a && b ? (a / b).toFixed(2) : '—');
  console.log(
    `\n(a) traced / untraced: server CPU per request ${ratio(on.cpuMicrosPerRequest, off.cpuMicrosPerRequest)}×, ` +
      `throughput ${pairedRatio(on, off).toFixed(2)} (median of paired rounds); ` +
      `${sink.exports()} exports, ${formatNumber(sink.bytes() / 1024)} KiB of spans`,
  );
  if (before)
    console.log(
      `(b) tracing off / no tracing code: server CPU per request ${ratio(off.cpuMicrosPerRequest, before.cpuMicrosPerRequest)}×, ` +
        `throughput ${pairedRatio(off, before).toFixed(2)} (median of paired rounds)`,
    );
  else
    console.log(
      `(b) tracing off: ${cpu(off)} µs of server CPU per request; compare it with row (f) of \`npm run bench:http\` on ` +
        'a commit without tracing code (the same server, started the same way), or set AGORA_BENCH_BASELINE_CLI to ' +
        "that commit's bin/agora.js (built) to load it here in the same rounds",
    );
  console.log(
    `load average ${loadAtStart.toFixed(2)} at the start, ${loadAtEnd.toFixed(2)} at the end; ${seconds} s rounds × ${rounds}`,
  );
  if (sink.exports() === 0) {
    console.error('the traced server exported no span: tracing did not start (see its log in ' + logs + ')');
    process.exitCode = 1;
  }
  // Judged before the bench's own load (two servers and the load generator) raised it.
  if (loadAtStart > BUSY)
    console.error(
      `the machine was busy (load average ${loadAtStart.toFixed(2)} > ${BUSY}): do not quote these figures`,
    );
} finally {
  await Promise.all(servers.map((server) => server.stop()));
  sink.close();
}
