// Benchmark of issue 2: the HTTP hot path of `agora serve` and of `agoraRouter`, against bare baselines
// measured in the same run. Not a timed test: figures vary with the machine; the ratios are what we track.
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hashText } from '../src/protocol/document.js';
import {
  alternating,
  DEFAULTS_ENV,
  formatNumber,
  load,
  pairedRatio,
  startProcess,
  table,
  type AlternatingResult,
  type BenchServer,
  type LoadResult,
} from './_harness.js';

const root = fileURLToPath(new URL('..', import.meta.url));
/** The command users run (bin/agora.js: the build when there is one); AGORA_BENCH_CLI names another to compare. */
const CLI = process.env.AGORA_BENCH_CLI ?? `${root}bin/agora.js`;
// No LLM (the routine answers) and no environment that would change the defaults.
const CLI_ENV = DEFAULTS_ENV;

/** Rounds each server is loaded for, in turns with the others (best round kept: see `alternating`). */
export const HTTP_ROUNDS = 6;

/** Runs (a)–(h) in alternating rounds of `Math.ceil(duration / 3)` s and returns the table and ratios. */
export async function benchHttp(
  duration: number,
  log: (line: string) => void,
  rounds = HTTP_ROUNDS,
): Promise<{ markdown: string; ratios: Record<string, number>; results: LoadResult[]; roundSeconds: number }> {
  const hash = hashText(readFileSync(`${root}protocols/unit-conversion.md`));
  const single = JSON.stringify({ protocolHash: hash, body: { value: 10, from: 'km', to: 'mi' } });
  const roundSeconds = Math.max(1, Math.ceil(duration / 3));
  const servers: BenchServer[] = [];
  const logs = await mkdtemp(join(tmpdir(), 'agora-bench-logs-'));
  const start = async (kind: string) => {
    const server = await startProcess('bench/_servers.mjs', [kind, root]);
    servers.push(server);
    return server;
  };
  try {
    log('  starting the servers…');
    const nodeEcho = await start('node-echo');
    const batchedEcho = await start('node-echo-batched');
    const expressEcho = await start('express-echo');
    // As `agora serve` runs it: faces and dashboard mounted. (c) and (e) load the same process, in turns.
    const agora = await start('agora-dashboard');
    // As a user starts it: the CLI with its defaults (the request log on, as text), its log to a file as a process
    // manager keeps it; and beside it the same command with `--quiet-requests`.
    const cli = (name: string, flags: string[]) =>
      startProcess(CLI, ['serve', root, '--port', '0', ...flags], CLI_ENV, join(logs, `${name}.log`)).then(
        (server) => (servers.push(server), server),
      );
    const served = await cli('default', []);
    const quiet = await cli('quiet', ['--quiet-requests']);
    // The Python SDK's shape of the same query: a base64 hash, sources always present, the body a JSON string.
    const python = JSON.stringify({
      protocolHash: Buffer.from(hash, 'hex').toString('base64'),
      protocolSources: [],
      body: JSON.stringify({ value: 10, from: 'km', to: 'mi' }),
    });
    for (const [server, body] of [
      [served, single],
      [served, python],
      [quiet, single],
    ] as const) {
      const reply = (await (await fetch(`${server.url}/`, { method: 'POST', body })).json()) as { status: string };
      if (reply.status !== 'success') throw new Error(`bench query refused: ${body} → ${JSON.stringify(reply)}`);
    }
    const router = await start('agora-express');
    const shoppingHash = hashText(readFileSync(`${root}protocols/shopping-list.md`));
    const ids: string[] = [];
    for (let index = 0; index < 200; index++) {
      const response = await fetch(`${agora.url}/`, {
        method: 'POST',
        body: JSON.stringify({ protocolHash: shoppingHash, multiround: true, body: { action: 'add', item: 'tea' } }),
      });
      ids.push(((await response.json()) as { conversationId: string }).conversationId);
    }
    // In turns c, a, f, g, h, a′, e, b, d: each tracked ratio's two loads are neighbours, seconds apart.
    const loads = [
      {
        name: '(c) agora serve (as it runs: faces and dashboard mounted), routine, single-round',
        url: agora.url,
        body: single,
        pid: agora.child.pid,
      },
      { name: '(a) bare node:http JSON echo', url: nodeEcho.url, body: single, pid: nodeEcho.child.pid },
      {
        name: '(f) `agora serve DIR` as users start it (CLI, defaults: a request record each, text, to a file)',
        url: served.url,
        body: single,
        pid: served.child.pid,
      },
      {
        name: '(g) `agora serve DIR --quiet-requests`',
        url: quiet.url,
        body: single,
        pid: quiet.child.pid,
      },
      {
        name: "(h) (f) with the Python SDK's shape of the query (base64 hash, body as a string)",
        url: served.url,
        body: python,
        pid: served.child.pid,
      },
      {
        name: "(a′) the same echo, writes batched per event-loop turn as agora serve's are",
        url: batchedEcho.url,
        body: single,
        pid: batchedEcho.child.pid,
      },
      {
        name: '(e) agora serve (as it runs), multiround follow-up',
        url: agora.url,
        body: JSON.stringify({ body: { action: 'list' } }),
        paths: ids.map((id) => `/conversations/${id}`),
        pid: agora.child.pid,
      },
      { name: '(b) bare Express 5 res.json(req.body)', url: expressEcho.url, body: single, pid: expressEcho.child.pid },
      { name: '(d) agoraRouter in Express, routine', url: router.url, body: single, pid: router.child.pid },
    ];
    // Warm up (JIT, routine modules) before measuring.
    for (const { name, pid: _pid, ...options } of loads) await load(`${name} warm-up`, { ...options, duration: 1 });
    const [c, a, f, g, h, a2, e, b, d] = (await alternating(loads, rounds, roundSeconds, log)) as AlternatingResult[] &
      Record<0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8, AlternatingResult>;
    const results = [a, a2, b, c, d, e, f, g, h];
    const written = await logStats(join(logs, 'default.log'));
    const best = (x: LoadResult, y: LoadResult) => x.requestsPerSecond / y.requestsPerSecond;
    const cpu = (x: AlternatingResult, y: AlternatingResult) =>
      x.cpuMicrosPerRequest && y.cpuMicrosPerRequest ? y.cpuMicrosPerRequest / x.cpuMicrosPerRequest : NaN;
    const ratios = {
      'c/a': pairedRatio(c, a),
      'c/a′': pairedRatio(c, a2),
      'd/b': pairedRatio(d, b),
      'e/a': pairedRatio(e, a),
      'f/a': pairedRatio(f, a),
      'f/g': pairedRatio(f, g),
      'h/a': pairedRatio(h, a),
    };
    const row = (label: string, x: AlternatingResult, y: AlternatingResult, target: string) => [
      label,
      formatNumber(pairedRatio(x, y), 2),
      formatNumber(best(x, y), 2),
      formatNumber(cpu(x, y), 2),
      target,
    ];
    const markdown = [
      `${rounds} rounds of ${roundSeconds} s per server, the servers loaded in turns; req/s is each one's best round.`,
      '',
      table(
        ['server', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'server CPU µs/request'],
        results.map((result) => [
          result.name,
          formatNumber(result.requestsPerSecond),
          result.p50,
          result.p99,
          result.errors + result.non2xx,
          result.cpuMicrosPerRequest === undefined ? '—' : formatNumber(result.cpuMicrosPerRequest, 1),
        ]),
      ),
      '',
      'Ratios: the median over rounds of the two loads measured seconds apart (the tracked value); the ratio of their',
      "best rounds; and the inverse ratio of their servers' CPU time per request (what each could serve with a core to itself).",
      "`agora serve` writes a busy turn's responses together (src/edge/_write-batch.ts), which a plain echo does not: (a′)",
      'is the echo with that one technique added, so c/a′ shows what the framework itself costs per request.',
      '',
      table(
        ['ratio', 'median of rounds', 'best / best', 'by CPU time', 'target'],
        [
          row('c/a (agora serve vs bare node:http)', c, a, '≥ 0.80'),
          row('c/a′ (agora serve vs the echo batching its writes too)', c, a2, '—'),
          row('d/b (agoraRouter vs bare Express)', d, b, '≥ 0.85'),
          row('e/a (multiround follow-up vs bare node:http)', e, a, '—'),
          row('f/a (`agora serve` with its defaults vs bare node:http)', f, a, '≥ 0.85'),
          row('f/g (the request log: defaults vs `--quiet-requests`)', f, g, '≥ 0.95'),
          row("h/a (the Python SDK's query vs bare node:http)", h, a, '—'),
        ],
      ),
      '',
      `(f)'s request log: ${formatNumber(written.lines)} records, ${formatNumber(written.bytes / written.lines, 0)} bytes ` +
        `each; its rounds: ${f.rounds.map((round) => formatNumber(round.requestsPerSecond)).join(', ')} req/s, ` +
        `(g)'s: ${g.rounds.map((round) => formatNumber(round.requestsPerSecond)).join(', ')}.`,
    ].join('\n');
    return { markdown, ratios, results, roundSeconds };
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    await rm(logs, { recursive: true, force: true });
  }
}

// The records a log file holds and its size.
async function logStats(file: string): Promise<{ lines: number; bytes: number }> {
  const text = await readFile(file, 'utf8');
  let lines = 0;
  for (let index = text.indexOf('\n'); index >= 0; index = text.indexOf('\n', index + 1)) lines += 1;
  return { lines, bytes: Buffer.byteLength(text) };
}
