// Benchmark of issue 11: a generated routine in the QuickJS sandbox against the same routine hand-written on the
// main thread, per call and over HTTP, in one run; then the two ways QuickJS can
// reach an async host tool (a promise bridge in the sync build, or the asyncify build). Ratios are what we track.
// `npm run bench:sandbox [-- --duration 3 --rounds 5]` (builds first: the agent runs from dist/).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { newQuickJSAsyncWASMModule, newQuickJSWASMModule } from 'quickjs-emscripten';
import { RoutineDeadlines } from '../src/routine/deadlines.js';
import { runRoutine } from '../src/routine/run.js';
import { bundleForQuickJS } from '../src/generation/sandbox/quickjs-bundle.js';
import { QuickJSSandbox } from '../src/generation/sandbox/quickjs.js';
import {
  alternating,
  formatNumber,
  load,
  pairedRatio,
  startProcess,
  table,
  type AlternatingLoad,
  type AlternatingResult,
  type BenchServer,
} from './_harness.js';
import { writeAgent } from './_sandbox-agent.js';
import { body, context, document, GENERATED, handWritten } from './_sandbox-routine.js';

/** Time limits of the hand-written runs, as a receiver gives them. */
const limits = { timeoutMs: 2000, deadlines: new RoutineDeadlines() };

// How long each side is loaded before it is measured. The generated side needs seconds: V8 first compiles QuickJS's
// WebAssembly with its baseline compiler and moves hot functions to the optimizing one in the background. Measured
// right after start (1 s rounds, req/s): 1,285, 4,870, 7,888, then about 12,000. Both sides get the same warm-up.
const WARM_UP_SECONDS = 4;

/** Calls per second of `call`, awaited one after another for `seconds` (after a warm-up). */
async function rate(seconds: number, call: () => Promise<unknown>): Promise<number> {
  const warm = performance.now() + WARM_UP_SECONDS * 1000;
  while (performance.now() < warm) await call();
  let count = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  while (performance.now() < end) {
    for (let index = 0; index < 20; index++) await call();
    count += 20;
  }
  return count / ((performance.now() - start) / 1000);
}

/** Tool round trips per second from QuickJS: a promise bridge in the sync build vs an asyncified function. */
async function toolBridges(calls: number): Promise<{ bridge: number; asyncify: number }> {
  const loop = `(async () => { let sum = 0; for (let i = 0; i < ${calls}; i++) sum += await tool(i); return sum; })()`;
  const sync = (await newQuickJSWASMModule()).newContext();
  sync.setProp(
    sync.global,
    'tool',
    sync.newFunction('tool', (value) => {
      const deferred = sync.newPromise();
      const number = sync.getNumber(value);
      void Promise.resolve(number + 1).then((result) => {
        const handle = sync.newNumber(result);
        deferred.resolve(handle);
        handle.dispose();
        deferred.dispose();
        sync.runtime.executePendingJobs();
      });
      return deferred.handle;
    }),
  );
  let start = performance.now();
  const promise = sync.unwrapResult(sync.evalCode(loop));
  sync.runtime.executePendingJobs();
  (await sync.resolvePromise(promise)).dispose?.();
  promise.dispose();
  const bridge = calls / ((performance.now() - start) / 1000);
  const asyncContext = (await newQuickJSAsyncWASMModule()).newContext();
  asyncContext.setProp(
    asyncContext.global,
    'tool',
    asyncContext.newAsyncifiedFunction('tool', async (value) =>
      asyncContext.newNumber(await Promise.resolve(asyncContext.getNumber(value) + 1)),
    ),
  );
  start = performance.now();
  const result = await asyncContext.evalCodeAsync(
    `let sum = 0; for (let i = 0; i < ${calls}; i++) sum += tool(i); sum`,
  );
  asyncContext.unwrapResult(result).dispose();
  const asyncify = calls / ((performance.now() - start) / 1000);
  return { bridge, asyncify };
}

/** Requests per second of a minimal node:http server (bench/_sandbox-server.ts) in each mode, load from wrk or autocannon. */
async function overHttp(
  seconds: number,
  log: (line: string) => void,
): Promise<{ bare: number; hand: number; quickjs: number }> {
  const rates: Record<string, number> = {};
  const payload = JSON.stringify({ body });
  for (const mode of ['bare', 'hand', 'quickjs']) {
    log(`  over HTTP: ${mode}…`);
    const server = await startProcess('bench/_sandbox-server.ts', [mode]);
    try {
      await load(`${mode} warm-up`, { url: server.url, body: payload, duration: WARM_UP_SECONDS });
      const result = await load(mode, { url: server.url, body: payload, duration: seconds });
      // A 5xx is a routine that failed: then the figure means nothing. Socket timeouts (wrk's 2 s) are reported.
      if (result.non2xx > 0) throw new Error(`${mode}: ${result.non2xx} failed requests`);
      rates[mode] = result.requestsPerSecond;
      if (result.errors)
        log(`  ${mode}: ${result.errors} requests timed out or failed at the socket (p99 ${result.p99} ms)`);
    } finally {
      await server.stop();
    }
  }
  return { bare: rates.bare!, hand: rates.hand!, quickjs: rates.quickjs! };
}

/**
 * Requests per second through the agent (`agora serve`'s server on the compiled build, bench/_servers.mjs): the
 * unit-conversion protocol answered by the routine hand-written in routines/, then by the same source as an approved
 * generated routine in the QuickJS sandbox (two agent folders, written by bench/_sandbox-agent.ts). This host's
 * cores are shared and its speed drifts by 2× from one minute to the next: both servers run side by side and the load
 * alternates between them `rounds` times (see alternating); the server's CPU time per request is measured too.
 */
async function throughAgent(
  seconds: number,
  rounds: number,
  log: (line: string) => void,
): Promise<{ hand: AlternatingResult; generated: AlternatingResult }> {
  const dirs: string[] = [];
  const servers: BenchServer[] = [];
  try {
    const loads: AlternatingLoad[] = [];
    for (const [mode, kind] of [
      ['hand', 'agora'],
      ['generated', 'agora-generated'],
    ] as const) {
      const dir = await mkdtemp(join(tmpdir(), `agora-bench-${mode}-`));
      dirs.push(dir);
      const body = await writeAgent(mode, dir);
      const server = await startProcess('bench/_servers.mjs', [kind, dir]);
      servers.push(server);
      await load(`${mode} warm-up`, { url: server.url, body, duration: WARM_UP_SECONDS });
      loads.push({ name: mode, url: server.url, body, pid: server.child.pid });
    }
    const [hand, generated] = (await alternating(loads, rounds, seconds, (line) =>
      log(`  through the agent: ${line.trim()}`),
    )) as [AlternatingResult, AlternatingResult];
    for (const [mode, result] of [
      ['hand', hand],
      ['generated', generated],
    ] as const) {
      // A 5xx is a routine that failed: then the figure means nothing. Socket timeouts (wrk's 2 s) are reported.
      const failed = result.rounds.reduce((sum, round) => sum + round.non2xx, 0);
      if (failed > 0) throw new Error(`agent, ${mode}: ${failed} failed requests`);
      const timedOut = result.rounds.reduce((sum, round) => sum + round.errors, 0);
      if (timedOut) log(`  agent, ${mode}: ${timedOut} requests timed out or failed at the socket`);
    }
    hand.rounds.forEach((round, index) =>
      log(
        `  round ${index + 1}: hand ${formatNumber(round.requestsPerSecond)} req/s, generated ${formatNumber(generated.rounds[index]!.requestsPerSecond)} req/s, ratio ${formatNumber(generated.rounds[index]!.requestsPerSecond / round.requestsPerSecond, 2)}`,
      ),
    );
    return { hand, generated };
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  }
}

const cpuText = (result: AlternatingResult) =>
  result.cpuMicrosPerRequest === undefined ? '—' : formatNumber(result.cpuMicrosPerRequest, 1);

/** Runs the sandbox benchmarks and returns the table and the ratio the issue tracks. */
export async function benchSandbox(
  seconds: number,
  log: (line: string) => void,
  rounds = 5,
): Promise<{ markdown: string; ratios: Record<string, number> }> {
  const quickjs = new QuickJSSandbox(await bundleForQuickJS(GENERATED));
  try {
    log('  hand-written on the main thread…');
    const hand = await rate(seconds, () => runRoutine(handWritten, body, context(), document, limits));
    log('  generated, QuickJS…');
    const sandboxed = await rate(seconds, () => quickjs.run('handle', body, context()));
    const agent = await throughAgent(seconds, rounds, log);
    const http = await overHttp(seconds, log);
    log('  tool bridges…');
    const bridges = await toolBridges(20_000);
    const cpu =
      agent.hand.cpuMicrosPerRequest && agent.generated.cpuMicrosPerRequest
        ? agent.hand.cpuMicrosPerRequest / agent.generated.cpuMicrosPerRequest
        : NaN;
    const ratios = {
      'agent generated/hand median': pairedRatio(agent.generated, agent.hand),
      'agent generated/hand': agent.generated.requestsPerSecond / agent.hand.requestsPerSecond,
      'agent generated/hand by CPU': cpu,
      'http quickjs/hand': http.quickjs / http.hand,
      'http hand/bare': http.hand / http.bare,
      'quickjs/hand': sandboxed / hand,
      'asyncify/bridge': bridges.asyncify / bridges.bridge,
    };
    const markdown = [
      table(
        ['unit-conversion routine (zod in and out, one tool call)', 'calls/s', 'µs/call'],
        [
          ['hand-written, main thread (runRoutine)', formatNumber(hand), formatNumber(1e6 / hand, 1)],
          ['generated, QuickJS sandbox', formatNumber(sandboxed), formatNumber(1e6 / sandboxed, 1)],
        ],
      ),
      '',
      table(
        [
          `unit conversion through the agent (agora serve), best of ${rounds} alternating rounds`,
          'req/s',
          'server CPU µs/request',
        ],
        [
          [
            'hand-written routine (routines/unit-conversion.ts)',
            formatNumber(agent.hand.requestsPerSecond),
            cpuText(agent.hand),
          ],
          [
            'same source, approved generated routine (QuickJS sandbox)',
            formatNumber(agent.generated.requestsPerSecond),
            cpuText(agent.generated),
          ],
        ],
      ),
      '',
      table(
        ['same routine behind a minimal node:http server', 'req/s'],
        [
          ['bare node:http JSON echo', formatNumber(http.bare)],
          ['hand-written routine', formatNumber(http.hand)],
          ['generated routine, QuickJS sandbox', formatNumber(http.quickjs)],
        ],
      ),
      '',
      // The tracked value, as in the other sections: the median of the rounds' ratios, each pair measured seconds apart.
      table(
        ['ratio', 'median of rounds', 'best / best', 'by CPU time', 'target'],
        [
          [
            'generated / hand-written, through the agent',
            formatNumber(ratios['agent generated/hand median'], 2),
            formatNumber(ratios['agent generated/hand'], 2),
            formatNumber(cpu, 2),
            '≥ 0.30',
          ],
          [
            'QuickJS generated / hand-written, minimal node:http server',
            '—',
            formatNumber(ratios['http quickjs/hand'], 2),
            '—',
            '—',
          ],
          ['QuickJS generated / hand-written, per call', '—', formatNumber(ratios['quickjs/hand'], 3), '—', '—'],
          [
            `tool round trips/s: promise bridge ${formatNumber(bridges.bridge)}, asyncify ${formatNumber(bridges.asyncify)}`,
            '—',
            formatNumber(ratios['asyncify/bridge'], 2),
            '—',
            'bridge chosen if ≥ 1',
          ],
        ],
      ),
    ].join('\n');
    return { markdown, ratios };
  } finally {
    await quickjs.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const durationFlag = process.argv.indexOf('--duration');
  const seconds = durationFlag > 0 ? Number(process.argv[durationFlag + 1]) : 3;
  const roundsFlag = process.argv.indexOf('--rounds');
  const rounds = roundsFlag > 0 ? Number(process.argv[roundsFlag + 1]) : 5;
  const { markdown } = await benchSandbox(seconds, (line) => console.error(line), rounds);
  console.log(markdown);
}
