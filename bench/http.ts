// Benchmark of issue 2: the HTTP hot path of `agora serve` and of `agoraRouter`, against bare baselines
// measured in the same run. Not a timed test: figures vary with the machine; the ratios are what we track.
import { fileURLToPath } from 'node:url';
import { hashText } from '../src/protocol/document.js';
import { readFileSync } from 'node:fs';
import { formatNumber, load, startProcess, table, type LoadResult } from './_harness.js';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Runs (a)–(e) and returns the table and ratios. */
export async function benchHttp(duration: number, log: (line: string) => void): Promise<{ markdown: string; ratios: Record<string, number>; results: LoadResult[] }> {
  const hash = hashText(readFileSync(`${root}protocols/unit-conversion.md`));
  const single = JSON.stringify({ protocolHash: hash, body: { value: 10, from: 'km', to: 'mi' } });
  const echoBody = single;
  const results: LoadResult[] = [];
  const run = async (name: string, kind: string, path: 'single' | 'follow-up' | 'echo') => {
    log(`  ${name}…`);
    const server = await startProcess('bench/_servers.mjs', [kind, root]);
    try {
      // Warm up (JIT, routine modules) before measuring.
      await load(`${name} warm-up`, { url: server.url, body: path === 'echo' ? echoBody : single, duration: 1 });
      if (path === 'follow-up') {
        const shoppingHash = hashText(readFileSync(`${root}protocols/shopping-list.md`));
        const ids: string[] = [];
        for (let index = 0; index < 200; index++) {
          const response = await fetch(`${server.url}/`, { method: 'POST', body: JSON.stringify({ protocolHash: shoppingHash, multiround: true, body: { action: 'add', item: 'tea' } }) });
          ids.push(((await response.json()) as { conversationId: string }).conversationId);
        }
        const result = await load(name, { url: server.url, duration, body: JSON.stringify({ body: { action: 'list' } }), paths: ids.map((id) => `/conversations/${id}`) });
        results.push(result);
      } else {
        results.push(await load(name, { url: server.url, body: path === 'echo' ? echoBody : single, duration }));
      }
    } finally {
      await server.stop();
    }
  };
  await run('(a) bare node:http JSON echo', 'node-echo', 'echo');
  await run('(b) bare Express 5 res.json(req.body)', 'express-echo', 'echo');
  await run('(c) agora serve (as it runs: faces and dashboard mounted), routine, single-round', 'agora-dashboard', 'single');
  await run('(d) agoraRouter in Express, routine', 'agora-express', 'single');
  await run('(e) agora serve (as it runs), multiround follow-up', 'agora-dashboard', 'follow-up');
  const [a, b, c, d, e] = results as [LoadResult, LoadResult, LoadResult, LoadResult, LoadResult];
  const ratios = { 'c/a': c.requestsPerSecond / a.requestsPerSecond, 'd/b': d.requestsPerSecond / b.requestsPerSecond, 'e/a': e.requestsPerSecond / a.requestsPerSecond };
  const markdown = [
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
  return { markdown, ratios, results };
}
