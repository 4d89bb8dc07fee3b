// Benchmark of issue 11 finding 5: what stopping a synchronous loop in a hand-written routine costs per call,
// against the plain call, in one run: (b) node:vm's `timeout` around the call (src/routine/isolate.ts), and (c) a
// message round trip to a worker thread, the floor of any worker pool (before running the routine there).
// `tsx bench/isolate.ts [--duration 2]`.
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { RoutineDeadlines } from '../src/routine/deadlines.js';
import { runRoutine } from '../src/routine/run.js';
import { SyncTimeLimit } from '../src/routine/isolate.js';
import { formatNumber, table } from './_harness.js';
import { body, context, document, handWritten } from './_sandbox-routine.js';

/** Time limits of the hand-written runs, as a receiver gives them. */
const limits = { timeoutMs: 2000, deadlines: new RoutineDeadlines() };

async function rate(seconds: number, call: () => Promise<unknown>): Promise<number> {
  const warm = performance.now() + 300;
  while (performance.now() < warm) await call();
  let count = 0;
  const start = performance.now();
  while (performance.now() < start + seconds * 1000) {
    for (let index = 0; index < 20; index++) await call();
    count += 20;
  }
  return count / ((performance.now() - start) / 1000);
}

/** Runs the three and returns the table and the ratios. */
export async function benchIsolate(
  seconds: number,
  log: (line: string) => void,
): Promise<{ markdown: string; ratios: Record<string, number> }> {
  const limit = new SyncTimeLimit();
  log('  plain call…');
  const plain = await rate(seconds, () => runRoutine(handWritten, body, context(), document, limits));
  log('  node:vm timeout…');
  const timed = await rate(seconds, () =>
    limit.run(() => runRoutine(handWritten, body, context(), document, limits), 2000),
  );
  log('  worker round trip…');
  const worker = new Worker(
    'const { parentPort } = require("node:worker_threads"); parentPort.on("message", (m) => parentPort.postMessage(m));',
    { eval: true },
  );
  const pending: ((value: unknown) => void)[] = [];
  worker.on('message', (message) => pending.shift()?.(message));
  const roundTrip = await rate(
    seconds,
    () =>
      new Promise((resolve) => {
        pending.push(resolve);
        worker.postMessage({ body, conversation: { id: null, turn: 1, state: {} } });
      }),
  );
  await worker.terminate();
  const ratios = { 'vm/plain': timed / plain, 'worker/plain': roundTrip / plain };
  const markdown = table(
    ['hand-written unit-conversion routine', 'calls/s', 'µs/call', 'added µs/call'],
    [
      ['(a) plain runRoutine', formatNumber(plain), formatNumber(1e6 / plain, 1), '—'],
      [
        '(b) under node:vm timeout (SyncTimeLimit)',
        formatNumber(timed),
        formatNumber(1e6 / timed, 1),
        formatNumber(1e6 / timed - 1e6 / plain, 1),
      ],
      [
        '(c) worker message round trip only (pool floor)',
        formatNumber(roundTrip),
        formatNumber(1e6 / roundTrip, 1),
        formatNumber(1e6 / roundTrip, 1),
      ],
    ],
  );
  return { markdown, ratios };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const durationFlag = process.argv.indexOf('--duration');
  const { markdown } = await benchIsolate(durationFlag > 0 ? Number(process.argv[durationFlag + 1]) : 2, (line) =>
    console.error(line),
  );
  console.log(markdown);
}
