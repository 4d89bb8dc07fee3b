// A minimal node:http server for bench/sandbox.ts: it answers every POST with the unit-conversion routine, run as
// the receiver would (hand-written through runRoutine, or generated in the QuickJS sandbox), or echoes the body
// (the bare baseline). `tsx bench/_sandbox-server.ts hand|quickjs|bare`; prints `PORT n` once listening.
import { createServer } from 'node:http';
import { bundleForQuickJS } from '../src/generation/sandbox/quickjs-bundle.js';
import { QuickJSSandbox } from '../src/generation/sandbox/quickjs.js';
import { RoutineDeadlines } from '../src/routine/deadlines.js';
import { runRoutine } from '../src/routine/run.js';
import { context, document, GENERATED, handWritten } from './_sandbox-routine.js';

/** Time limits of the hand-written runs, as a receiver gives them. */
const limits = { timeoutMs: 2000, deadlines: new RoutineDeadlines() };

const mode = process.argv[2] ?? 'bare';
const sandbox =
  mode === 'quickjs' ? new QuickJSSandbox(await bundleForQuickJS(GENERATED), { name: 'bench' }) : undefined;

const seen = new Set<string>();
const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const answer = (status: number, value: unknown) => {
      const text = JSON.stringify(value);
      response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      response.end(text);
    };
    let parsed: { body?: unknown };
    try {
      parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { body?: unknown };
    } catch {
      answer(400, { error: 'Bad JSON' });
      return;
    }
    const run =
      mode === 'bare'
        ? Promise.resolve(parsed)
        : mode === 'quickjs'
          ? sandbox!.run('handle', parsed.body, context()).then((result) => result.value)
          : runRoutine(handWritten, parsed.body as never, context(), document, limits);
    run.then(
      (value) => answer(200, { status: 'success', body: value }),
      (error: unknown) => {
        // Said once per kind of failure, so a benchmark that fails says why.
        const message = error instanceof Error ? error.message : String(error);
        if (!seen.has(message)) console.error(`routine failed: ${message}`);
        seen.add(message);
        answer(500, { status: 'error', body: 'Routine failed' });
      },
    );
  });
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  console.log(`PORT ${typeof address === 'object' && address ? address.port : 0}`);
});
