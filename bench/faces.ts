// Benchmark of the faces: ROAR `POST /roar/message` (HMAC-signed, verified, reply signed; and unsigned, as an agent
// without a ROAR secret takes it) and A2A 1.0 `SendMessage` (a data part `{protocolHash, body}`, the task kept for
// GetTask) against Agora `POST /` for the same routine, on the same server in the same run. Not a timed test: the
// ratios are what we track.
// Run: npm run build && tsx bench/faces.ts [--duration 5] (the server runs from dist, as `agora serve` does)
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { canonicalJson, pythonFloat, RawNumber } from '../src/bindings/roar/canonical.js';
import { hmacSignature, signingBody } from '../src/bindings/roar/signing.js';
import { hashText } from '../src/protocol/document.js';
import {
  alternating,
  formatNumber,
  load,
  loadGenerator,
  pairedRatio,
  resultsTable,
  startProcess,
  table,
  type AlternatingResult,
} from './_harness.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const SECRET = 'bench-secret';

/** Runs both loads and returns the Markdown table with the ratio. */
export async function benchFaces(duration: number, log: (line: string) => void, rounds = 6): Promise<string> {
  const roundSeconds = Math.max(1, Math.ceil(duration / 3));
  const hash = hashText(readFileSync(`${root}protocols/unit-conversion.md`));
  const body = { value: 10, from: 'km', to: 'mi' };
  const server = await startProcess('bench/_servers.mjs', ['agora-faces', root], { BENCH_ROAR_SECRET: SECRET });
  // As `agora serve` mounts the faces by default: no ROAR secret, so messages come and go unsigned.
  const open = await startProcess('bench/_servers.mjs', ['agora-faces-open', root]);
  try {
    const card = (await (await fetch(`${server.url}/roar/card`)).json()) as { identity: { did: string } };
    const openCard = (await (await fetch(`${open.url}/roar/card`)).json()) as { identity: { did: string } };
    const timestamp = new RawNumber(pythonFloat(Date.now() / 1000));
    const fields = {
      id: 'msg_bench',
      from: 'did:roar:agent:bench-0123456789abcdef',
      to: card.identity.did,
      intent: 'execute',
      payload: { protocolHash: hash, body },
      context: {},
      timestamp,
    };
    const roar = canonicalJson({
      roar: '1.0',
      ...fields,
      from: { did: fields.from },
      to: { did: fields.to },
      auth: { signature: hmacSignature(signingBody(fields), SECRET), timestamp },
    });
    const unsigned = canonicalJson({
      roar: '1.0',
      ...fields,
      from: { did: fields.from },
      to: { did: openCard.identity.did },
    });
    const agora = JSON.stringify({ protocolHash: hash, body });
    const a2a = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: { messageId: 'm-bench', role: 'ROLE_USER', parts: [{ data: { protocolHash: hash, body } }] } },
    });
    const a2aHeaders = { 'a2a-version': '1.0' };
    const check = (await (await fetch(`${server.url}/roar/message`, { method: 'POST', body: roar })).json()) as {
      payload: unknown;
    };
    if ((check.payload as { status?: string }).status !== 'ok')
      throw new Error(`ROAR bench message refused: ${JSON.stringify(check)}`);
    const openCheck = (await (await fetch(`${open.url}/roar/message`, { method: 'POST', body: unsigned })).json()) as {
      payload: unknown;
    };
    if ((openCheck.payload as { status?: string }).status !== 'ok')
      throw new Error(`ROAR unsigned bench message refused: ${JSON.stringify(openCheck)}`);
    const a2aCheck = (await (
      await fetch(`${server.url}/a2a`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...a2aHeaders },
        body: a2a,
      })
    ).json()) as { result?: { task?: { status?: { state?: string } } } };
    if (a2aCheck.result?.task?.status?.state !== 'TASK_STATE_COMPLETED')
      throw new Error(`A2A bench message refused: ${JSON.stringify(a2aCheck)}`);
    await load('warm-up', { url: server.url, body: agora, duration: 1 });
    await load('warm-up', { url: server.url, path: '/roar/message', body: roar, duration: 1 });
    await load('warm-up', { url: server.url, path: '/a2a', body: a2a, headers: a2aHeaders, duration: 1 });
    await load('warm-up', { url: open.url, body: agora, duration: 1 });
    await load('warm-up', { url: open.url, path: '/roar/message', body: unsigned, duration: 1 });
    // Both on one server, in alternating rounds (the host's speed swings within seconds): each keeps its best round,
    // and the tracked ratio is the median of the rounds' ratios, each pair measured seconds apart.
    const pid = server.child.pid;
    const openPid = open.child.pid;
    const [a, r, s, o, u] = (await alternating(
      [
        { name: 'Agora POST /, routine', url: server.url, body: agora, pid },
        {
          name: 'ROAR POST /roar/message, HMAC-signed, routine',
          url: server.url,
          path: '/roar/message',
          body: roar,
          pid,
        },
        {
          name: 'A2A 1.0 SendMessage, data part, routine',
          url: server.url,
          path: '/a2a',
          body: a2a,
          headers: a2aHeaders,
          pid,
        },
        {
          name: 'Agora POST /, routine (faces as by default: no ROAR secret)',
          url: open.url,
          body: agora,
          pid: openPid,
        },
        {
          name: 'ROAR POST /roar/message, unsigned (no secret), routine',
          url: open.url,
          path: '/roar/message',
          body: unsigned,
          pid: openPid,
        },
      ],
      rounds,
      roundSeconds,
      log,
    )) as [AlternatingResult, AlternatingResult, AlternatingResult, AlternatingResult, AlternatingResult];
    const ratio = (name: string, face: AlternatingResult, target: string, base = a) => {
      const cpu =
        base.cpuMicrosPerRequest && face.cpuMicrosPerRequest
          ? base.cpuMicrosPerRequest / face.cpuMicrosPerRequest
          : NaN;
      return [
        name,
        formatNumber(pairedRatio(face, base), 2),
        formatNumber(face.requestsPerSecond / base.requestsPerSecond, 2),
        formatNumber(cpu, 2),
        target,
      ];
    };
    return [
      `${rounds} rounds of ${roundSeconds} s each, in turns; req/s is each one's best round.`,
      '',
      resultsTable([a, r, s, o, u]),
      '',
      table(
        ['ratio', 'median of rounds', 'best / best', 'by CPU time', 'target'],
        [
          ratio('ROAR signed / Agora', r, '≥ 0.70'),
          ratio('A2A / Agora', s, '≥ 0.70'),
          ratio('ROAR unsigned / Agora (same server)', u, '≥ 0.85', o),
        ],
      ),
    ].join('\n');
  } finally {
    await server.stop();
    await open.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({ options: { duration: { type: 'string', default: '5' } } });
  const duration = Number(values.duration);
  process.stdout.write(
    `## Faces: ROAR and A2A vs Agora (${duration} s each, 50 connections, load from ${loadGenerator()})\n\n${await benchFaces(duration, (line) => process.stderr.write(`${line}\n`))}\n`,
  );
}
