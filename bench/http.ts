// Benchmark of issue 2: the HTTP hot path of `agora serve` and of `agoraRouter`, against bare baselines
// measured in the same run. Not a timed test: figures vary with the machine; the ratios are what we track.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { hashText } from '../src/protocol/document.js';
import { alternating, formatNumber, load, startProcess, table, type BenchServer, type LoadResult } from './_harness.js';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Rounds each server is loaded for, in turns with the others (best round kept: see `alternating`). */
export const HTTP_ROUNDS = 6;

/** Runs (a)–(e) in alternating rounds of `Math.ceil(duration / 3)` s and returns the table and ratios. */
export async function benchHttp(duration: number, log: (line: string) => void, rounds = HTTP_ROUNDS): Promise<{ markdown: string; ratios: Record<string, number>; results: LoadResult[]; roundSeconds: number }> {
  const hash = hashText(readFileSync(`${root}protocols/unit-conversion.md`));
  const single = JSON.stringify({ protocolHash: hash, body: { value: 10, from: 'km', to: 'mi' } });
  const roundSeconds = Math.max(1, Math.ceil(duration / 3));
  const servers: BenchServer[] = [];
  const start = async (kind: string) => {
    const server = await startProcess('bench/_servers.mjs', [kind, root]);
    servers.push(server);
    return server;
  };
  try {
    log('  starting the servers…');
    const nodeEcho = await start('node-echo');
    const expressEcho = await start('express-echo');
    // As `agora serve` runs it: faces and dashboard mounted. (c) and (e) load the same process, in turns.
    const agora = await start('agora-dashboard');
    const router = await start('agora-express');
    const shoppingHash = hashText(readFileSync(`${root}protocols/shopping-list.md`));
    const ids: string[] = [];
    for (let index = 0; index < 200; index++) {
      const response = await fetch(`${agora.url}/`, { method: 'POST', body: JSON.stringify({ protocolHash: shoppingHash, multiround: true, body: { action: 'add', item: 'tea' } }) });
      ids.push(((await response.json()) as { conversationId: string }).conversationId);
    }
    const loads = [
      { name: '(a) bare node:http JSON echo', url: nodeEcho.url, body: single },
      { name: '(b) bare Express 5 res.json(req.body)', url: expressEcho.url, body: single },
      { name: '(c) agora serve (as it runs: faces and dashboard mounted), routine, single-round', url: agora.url, body: single },
      { name: '(d) agoraRouter in Express, routine', url: router.url, body: single },
      { name: '(e) agora serve (as it runs), multiround follow-up', url: agora.url, body: JSON.stringify({ body: { action: 'list' } }), paths: ids.map((id) => `/conversations/${id}`) },
    ];
    // Warm up (JIT, routine modules) before measuring.
    for (const { name, ...options } of loads) await load(`${name} warm-up`, { ...options, duration: 1 });
    const results = await alternating(loads, rounds, roundSeconds, log);
    const [a, b, c, d, e] = results as [LoadResult, LoadResult, LoadResult, LoadResult, LoadResult];
    const ratios = { 'c/a': c.requestsPerSecond / a.requestsPerSecond, 'd/b': d.requestsPerSecond / b.requestsPerSecond, 'e/a': e.requestsPerSecond / a.requestsPerSecond };
    const markdown = [
      `Best of ${rounds} rounds of ${roundSeconds} s per server, the servers loaded in turns.`,
      '',
      table(
        ['server', 'req/s', 'p50 ms', 'p99 ms', 'errors'],
        results.map((result) => [result.name, formatNumber(result.requestsPerSecond), result.p50, result.p99, result.errors + result.non2xx]),
      ),
      '',
      table(
        ['ratio', 'value', 'target'],
        [
          ['c/a (agora serve vs bare node:http)', formatNumber(ratios['c/a'], 2), '≥ 0.80'],
          ['d/b (agoraRouter vs bare Express)', formatNumber(ratios['d/b'], 2), '≥ 0.85'],
          ['e/a (multiround follow-up vs bare node:http)', formatNumber(ratios['e/a'], 2), '—'],
        ],
      ),
    ].join('\n');
    return { markdown, ratios, results, roundSeconds };
  } finally {
    await Promise.all(servers.map((server) => server.stop()));
  }
}
