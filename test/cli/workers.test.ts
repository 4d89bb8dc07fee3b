import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { hashText } from '../../src/protocol/document.js';
import { eventually, makeAgentFolder } from '../helpers/agent-folder.js';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { cliArgs, runCli, startServe } from '../helpers/cli.js';
import { useTestRedis } from '../helpers/redis.js';
import { COUNTER_HASH, COUNTER_PD, COUNTER_ROUTINE } from '../helpers/counter-agent.js';
import { closingFetch } from '../helpers/closing-fetch.js';
import { a2aTurns, mcpTurns, roarHttpTurns, roarSocketTurns } from '../helpers/face-clients.js';

const NO_KEY = { ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: '', OPENAI_API_KEY: '' };

type Reply = { status: string; body?: { count: number; pid: number }; error?: string; conversationId?: string };

/** A POST on a connection of its own: the cluster's primary hands each new connection to the next worker. */
function post(url: string, path: string, body: unknown): Promise<{ status: number; reply: Reply }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      `${url}${path}`,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', connection: 'close' } },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => {
          try {
            resolve({ status: response.statusCode ?? 0, reply: JSON.parse(text) as Reply });
          } catch (error) {
            reject(error);
          }
        });
        response.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    // A connection handed to a worker as it is killed is never answered: the client gives up on it.
    outgoing.setTimeout(8000, () => outgoing.destroy(new Error('no answer')));
    outgoing.end(JSON.stringify(body));
  });
}

const start = (url: string) => post(url, '/', { protocolHash: COUNTER_HASH, multiround: true, body: { add: 1 } });
const turn = (url: string, id: string) => post(url, `/conversations/${id}`, { body: { add: 1 } });

describe('agora serve --workers', () => {
  it('refuses workers on the memory store with one clear line', async () => {
    const result = await runCli(['serve', '--workers', '2', '--port', '0'], { env: NO_KEY });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain('--workers 2 needs a shared store: pass --store redis://');
    const hub = await runCli(['hub', '--workers', '3', '--port', '0'], { env: NO_KEY });
    expect(hub.code).toBe(2);
    expect(hub.stderr).toContain('--workers 3 needs a shared store');
  });
});

const redisUrl = process.env.AGORA_TEST_REDIS_URL;
const describeRedis = redisUrl ? describe : describe.skip;
const title = redisUrl
  ? 'agora serve --workers on Redis'
  : 'agora serve --workers on Redis (skipped: set AGORA_TEST_REDIS_URL=redis://127.0.0.1:6379/0, or source .ci/redis.sh)';

describeRedis(title, () => {
  const { freshPrefix } = useTestRedis(redisUrl ?? '');
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  }, 60_000);

  async function startWorkers(workers: number, extra: string[] = []) {
    const folder = await makeAgentFolder({
      'protocols/counter.md': COUNTER_PD,
      'routines/counter.ts': COUNTER_ROUTINE,
    });
    cleanups.push(folder.cleanup);
    const store = new URL(redisUrl ?? '');
    store.searchParams.set('prefix', freshPrefix());
    // A worker killed mid-turn holds its conversation's lock until this runs out.
    store.searchParams.set('lockTtlMs', '1500');
    const served = await startServe(
      [folder.dir, '--port', '0', '--store', store.href, '--workers', String(workers), ...extra],
      { env: NO_KEY },
    );
    cleanups.push(() => served.stop('SIGTERM'));
    return served;
  }

  it('runs a multiround conversation alternating between the workers, losing no turn, each log record naming its worker', async () => {
    const served = await startWorkers(2);
    expect(served.output()).toMatch(/2 workers listening on http:\/\/127\.0\.0\.1:\d+/);
    const first = await start(served.url);
    const id = first.reply.conversationId!;
    const pids = new Set([first.reply.body!.pid]);
    const counts = [first.reply.body!.count];
    for (let index = 0; index < 11; index++) {
      const { reply } = await turn(served.url, id);
      expect(reply.status, JSON.stringify(reply)).toBe('success');
      pids.add(reply.body!.pid);
      counts.push(reply.body!.count);
    }
    expect(pids.size).toBe(2);
    expect(counts).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(served.output()).toMatch(/agora \(worker 1\): worker ready on/);
    expect(served.output()).toMatch(/agora \(worker 2\): worker ready on/);
    expect(served.output()).toMatch(/agora\[w1\] info request \S+ POST \/conversations\/\S+ 200/);
    expect(served.output()).toMatch(/agora\[w2\] info request \S+ POST \/conversations\/\S+ 200/);
  }, 120_000);

  for (const token of [undefined, 'w0rkers-token']) {
    it(`keeps each face's conversation across the workers: A2A, ROAR (HTTP and WebSocket) and MCP clients count 1, 2, 3 (${token ? 'with --token' : 'tokenless'})`, async () => {
      const served = await startWorkers(2, token ? ['--token', token] : []);
      // Every request on a connection of its own: the primary hands each to the next worker.
      const options = { fetch: closingFetch, ...(token ? { token } : {}) };
      const runs = {
        a2a: await a2aTurns(served.url, 3, options),
        a2aChosen: await a2aTurns(served.url, 3, { ...options, contextId: 'client-context' }),
        roarHttp: await roarHttpTurns(served.url, 3, 'client-session-http', options),
        roarSocket: await roarSocketTurns(served.url, 3, 'client-session-ws', options),
        mcp: await mcpTurns(served.url, 3, options),
      };
      for (const [face, turns] of Object.entries(runs)) expect(turns.counts, face).toEqual([1, 2, 3]);
      expect(new Set(Object.values(runs).flatMap((turns) => turns.pids)).size).toBe(2);
    }, 120_000);
  }

  it('keeps every answered turn when a worker is killed mid-load, and the primary starts another', async () => {
    const served = await startWorkers(2);
    const conversations = await Promise.all([0, 1, 2, 3].map(() => start(served.url)));
    const answered = new Map(conversations.map(({ reply }) => [reply.conversationId!, [reply.body!.count]]));
    const pids = new Set(conversations.map(({ reply }) => reply.body!.pid));
    const victim = [...pids][0]!;
    let killed = false;
    let lost = 0;
    // Four conversations driven at once, turn after turn; one worker is killed while they run.
    await Promise.all(
      [...answered.keys()].map(async (id) => {
        for (let index = 0; index < 15; index++) {
          if (id === [...answered.keys()][0] && index === 5 && !killed) {
            killed = true;
            process.kill(victim, 'SIGKILL');
          }
          try {
            const { reply } = await turn(served.url, id);
            if (reply.status !== 'success') throw new Error(JSON.stringify(reply));
            answered.get(id)!.push(reply.body!.count);
            pids.add(reply.body!.pid);
          } catch {
            lost += 1;
          }
        }
      }),
    );
    expect(killed).toBe(true);
    for (const [id, counts] of answered) {
      // No answered turn was lost: each answer counts on from the last one answered (a turn the dead worker took and
      // never answered may have counted once more).
      for (let index = 1; index < counts.length; index++)
        expect(counts[index]! - counts[index - 1]!, `${id}: ${counts.join(',')}`).toBeGreaterThanOrEqual(1);
      const { reply } = await turn(served.url, id);
      expect(reply.body!.count).toBeGreaterThan(counts.at(-1)!);
      expect(reply.body!.count - 1).toBeLessThanOrEqual(counts.at(-1)! + lost);
    }
    expect(answered.get([...answered.keys()][0]!)!.length).toBeGreaterThan(1);
    expect(served.output()).toMatch(
      new RegExp(`worker \\d+ \\(pid ${victim}\\) stopped with signal SIGKILL; starting another`),
    );
    // The replacement serves: a third worker process answers.
    await eventually(async () => {
      const { reply } = await start(served.url);
      pids.add(reply.body!.pid);
      return pids.size >= 3;
    }, 30_000);
  }, 120_000);

  it('runs agora hub --workers 2: a document published through one worker is listed by both, and the rate limit is counted once for all', async () => {
    const store = new URL(redisUrl ?? '');
    store.searchParams.set('prefix', freshPrefix());
    const child = spawn(
      process.execPath,
      cliArgs(['hub', '--port', '0', '--store', store.href, '--workers', '2', '--rate-limit', '12']),
      { env: { ...process.env, ...NO_KEY }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    cleanups.push(async () => {
      child.kill('SIGTERM');
      await exited;
    });
    let output = '';
    const url = await new Promise<string>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const match = /2 workers listening on (http:\/\/\S+)/.exec(output);
        if (match) resolve(match[1]!);
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code) => reject(new Error(`agora hub exited with ${code}: ${output}`)));
    });
    const get = (path: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        request(`${url}${path}`, { agent: false, headers: { connection: 'close' } }, (response) => {
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (body += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        })
          .on('error', reject)
          .end();
      });
    const text =
      '---\nname: Tide tables\ndescription: High and low tides of a harbour.\nmultiround: false\n---\nThe sender sends JSON {"harbour": string}.\n';
    const published = await post(url, '/protocols', { hash: hashText(text), text });
    expect(published.status).toBe(201);
    // Each GET on a new connection: the two workers take turns, and each lists the document.
    const statuses: number[] = [];
    for (let index = 0; index < 11; index++) {
      const listed = await get('/protocols?q=tides');
      statuses.push(listed.status);
      if (listed.status === 200) expect(listed.body).toContain(hashText(text));
    }
    expect(statuses).toEqual(Array(11).fill(200));
    // 12 requests a minute per client, counted in Redis: the 13th is refused whichever worker takes it.
    expect((await get('/protocols')).status).toBe(429);
    expect((await get('/health')).status).toBe(429);
  }, 120_000);

  it('stops with exit code 1 when its workers cannot start (the port is taken), each saying why', async () => {
    const taken = createServer();
    taken.listen(0, '127.0.0.1');
    await once(taken, 'listening');
    cleanups.push(() => new Promise((resolve) => taken.close(resolve)));
    const store = new URL(redisUrl ?? '');
    store.searchParams.set('prefix', freshPrefix());
    const result = await runCli(
      ['serve', '--port', String((taken.address() as AddressInfo).port), '--store', store.href, '--workers', '2'],
      { env: NO_KEY, timeoutMs: 60_000 },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/agora serve: .*EADDRINUSE/);
    expect(result.stderr).toMatch(/worker \d stopped with code 1 before it listened; stopping/);
  }, 90_000);
});
