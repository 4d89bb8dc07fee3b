// Issue 42: multiround follow-ups on a Redis Cluster (3 masters, 3 replicas, started here) against one Redis, in
// the same run: what spreading conversations over slots costs or gains, and what waiting for a replica (WAIT, the
// cluster's default) costs per turn. `npm run bench -- --only cluster`.
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { formatNumber, load, loadGenerator, startProcess, table, type LoadResult } from './_harness.js';
import { FOLLOW_UP, NO_LLM, startConversations } from './scale.js';
import { missingRedis, startCluster, startSingle } from '../test/helpers/redis-topology.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const CONVERSATIONS = 200;

async function followUps(name: string, store: string, duration: number): Promise<LoadResult> {
  const server = await startProcess('bin/agora.js', ['serve', root, '--port', '0', '--store', store], NO_LLM);
  try {
    const ids = await startConversations(server.url, CONVERSATIONS);
    const paths = ids.map((id) => `/conversations/${id}`);
    const options = { url: server.url, body: FOLLOW_UP, paths, connections: 50 };
    await load('warm-up', { ...options, duration: 1 });
    return await load(name, { ...options, duration });
  } finally {
    // Requests the load generator abandoned at its deadline finish before the store closes.
    await delay(500);
    await server.stop();
  }
}

/** The section `bench/run.ts` runs: its Markdown. */
export async function benchCluster(duration: number, log: (line: string) => void): Promise<string> {
  const title = `## Redis Cluster vs one Redis: multiround follow-ups (agora serve, ${duration} s per run, 50 connections, ${CONVERSATIONS} conversations, load from ${loadGenerator()})`;
  const missing = missingRedis();
  if (missing) return `${title}\n\nSkipped: ${missing}.`;
  log('  starting one Redis and a 3-master, 3-replica cluster…');
  const [single, cluster] = await Promise.all([startSingle(), startCluster()]);
  try {
    const results: LoadResult[] = [];
    for (const [name, store] of [
      ['one Redis', `${single.url}?prefix=bench:`],
      ['cluster, no WAIT', `${cluster.url}?prefix=bench:&waitReplicas=0`],
      ['cluster, WAIT 1 replica (default)', `${cluster.url}?prefix=bench:`],
    ] as const) {
      log(`  ${name}…`);
      results.push(await followUps(name, store, duration));
    }
    const base = results[0]!.requestsPerSecond;
    return [
      title,
      '',
      table(
        ['store', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'vs one Redis'],
        results.map((result) => [
          result.name,
          formatNumber(result.requestsPerSecond),
          result.p50,
          result.p99,
          result.errors + result.non2xx,
          formatNumber(result.requestsPerSecond / base, 2),
        ]),
      ),
      '',
      'The agent, the 7 redis-servers and the load generator share the same cores, and the rows run one after ' +
        'another on a machine shared with other work: figures are noisy. A cluster turn costs one more round trip ' +
        '(the live index is a key of its own); its gain (several masters) needs cores to show.',
    ].join('\n');
  } finally {
    await Promise.all([single.stop(), cluster.stop()]);
  }
}
