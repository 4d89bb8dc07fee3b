// Benchmark of issue 11: a generated routine in the QuickJS sandbox against the same routine hand-written on the
// main thread, per call and over HTTP, in one run; then the two ways QuickJS can
// reach an async host tool (a promise bridge in the sync build, or the asyncify build). Ratios are what we track.
// `tsx bench/sandbox.ts [--duration 3]`.
import { pathToFileURL } from 'node:url';
import { newQuickJSAsyncWASMModule, newQuickJSWASMModule } from 'quickjs-emscripten';
import { runRoutine } from '../src/routine/run.js';
import { bundleForQuickJS } from '../src/generation/quickjs-bundle.js';
import { QuickJSSandbox } from '../src/generation/quickjs.js';
import { formatNumber, load, startProcess, table } from './_harness.js';
import { body, context, document, GENERATED, handWritten } from './_sandbox-routine.js';

/** Calls per second of `call`, awaited one after another for `seconds` (after a warm-up). */
async function rate(seconds: number, call: () => Promise<unknown>): Promise<number> {
  const warm = performance.now() + 300;
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
  sync.setProp(sync.global, 'tool', sync.newFunction('tool', (value) => {
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
  }));
  let start = performance.now();
  const promise = sync.unwrapResult(sync.evalCode(loop));
  sync.runtime.executePendingJobs();
  (await sync.resolvePromise(promise)).dispose?.();
  promise.dispose();
  const bridge = calls / ((performance.now() - start) / 1000);
  const asyncContext = (await newQuickJSAsyncWASMModule()).newContext();
  asyncContext.setProp(asyncContext.global, 'tool', asyncContext.newAsyncifiedFunction('tool', async (value) => asyncContext.newNumber(await Promise.resolve(asyncContext.getNumber(value) + 1))));
  start = performance.now();
  const result = await asyncContext.evalCodeAsync(`let sum = 0; for (let i = 0; i < ${calls}; i++) sum += tool(i); sum`);
  asyncContext.unwrapResult(result).dispose();
  const asyncify = calls / ((performance.now() - start) / 1000);
  return { bridge, asyncify };
}

/** Requests per second of a minimal node:http server (bench/_sandbox-server.ts) in each mode, load from wrk or autocannon. */
async function overHttp(seconds: number, log: (line: string) => void): Promise<{ bare: number; hand: number; quickjs: number }> {
  const rates: Record<string, number> = {};
  const payload = JSON.stringify({ body });
  for (const mode of ['bare', 'hand', 'quickjs']) {
    log(`  over HTTP: ${mode}…`);
    const server = await startProcess('bench/_sandbox-server.ts', [mode]);
    try {
      await load(`${mode} warm-up`, { url: server.url, body: payload, duration: 1 });
      const result = await load(mode, { url: server.url, body: payload, duration: seconds });
      if (result.errors + result.non2xx > 0) throw new Error(`${mode}: ${result.errors + result.non2xx} failed requests`);
      rates[mode] = result.requestsPerSecond;
    } finally {
      await server.stop();
    }
  }
  return { bare: rates.bare!, hand: rates.hand!, quickjs: rates.quickjs! };
}

/** Runs the sandbox benchmarks and returns the table and the ratio the issue tracks. */
export async function benchSandbox(seconds: number, log: (line: string) => void): Promise<{ markdown: string; ratios: Record<string, number> }> {
  const quickjs = new QuickJSSandbox(await bundleForQuickJS(GENERATED));
  try {
    log('  hand-written on the main thread…');
    const hand = await rate(seconds, () => runRoutine(handWritten, body, context(), document, 2000));
    log('  generated, QuickJS…');
    const sandboxed = await rate(seconds, () => quickjs.run('handle', body, context()));
    const http = await overHttp(seconds, log);
    log('  tool bridges…');
    const bridges = await toolBridges(20_000);
    const ratios = { 'http quickjs/hand': http.quickjs / http.hand, 'http hand/bare': http.hand / http.bare, 'quickjs/hand': sandboxed / hand, 'asyncify/bridge': bridges.asyncify / bridges.bridge };
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
        ['same routine behind a minimal node:http server', 'req/s'],
        [
          ['bare node:http JSON echo', formatNumber(http.bare)],
          ['hand-written routine', formatNumber(http.hand)],
          ['generated routine, QuickJS sandbox', formatNumber(http.quickjs)],
        ],
      ),
      '',
      table(
        ['ratio', 'value', 'target'],
        [
          ['QuickJS generated / hand-written, over HTTP', formatNumber(ratios['http quickjs/hand'], 2), '≥ 0.30'],
          ['QuickJS generated / hand-written, per call', formatNumber(ratios['quickjs/hand'], 3), '—'],
          [`tool round trips/s: promise bridge ${formatNumber(bridges.bridge)}, asyncify ${formatNumber(bridges.asyncify)}`, formatNumber(ratios['asyncify/bridge'], 2), 'bridge chosen if ≥ 1'],
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
  const { markdown } = await benchSandbox(seconds, (line) => console.error(line));
  console.log(markdown);
}
