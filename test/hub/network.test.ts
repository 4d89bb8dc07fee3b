// End to end on loopback: agents, hubs and chains over real HTTP; the hub killed mid-chain in its own process.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runChain } from '../../src/hub/chains.js';
import { HubClient } from '../../src/hub/client.js';
import { startHub } from '../../src/hub/server.js';
import { AnthropicModel } from '../../src/llm/anthropic/model.js';
import { silentLogger } from '../../src/log.js';
import { hashText } from '../../src/protocol/document.js';
import { FakeAnthropic } from '../../src/testing/fake-anthropic.js';
import { runCli, startHubCommand } from '../helpers/cli.js';
import { startOapPlanner } from '../helpers/oap-agent.js';
import { document, startLoopbackAgent, type LoopbackAgent } from './_agents.js';

// The agents here listen on loopback: the hops' address guard lets them through, as the hub's setting does.
const LOCAL = { allowPrivateAgents: true };

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The three agents of a chain: research → summarise → publish, each naming the next by its directory name. */
async function chainAgents(onSummarise: () => Promise<void> = async () => {}) {
  const researcher = await startLoopbackAgent(
    { 'Research topics': 'Finds facts about a topic and hands them on.' },
    (body) => ({
      facts: ['fact 1', 'fact 2'],
      goal: (body as { goal: string }).goal,
      handoff: { next_agent: 'summariser' },
    }),
  );
  const summariser = await startLoopbackAgent(
    { 'Summarise text': 'Writes a short summary of facts.' },
    async (body) => {
      await onSummarise();
      return {
        summary: `summary of ${JSON.stringify((body as { input: unknown }).input)}`,
        handoff: { next_agent: 'publisher' },
      };
    },
  );
  const publisher = await startLoopbackAgent({ 'Publish notes': 'Publishes a note to the team wiki.' }, () => ({
    published: true,
  }));
  for (const agent of [researcher, summariser, publisher]) cleanups.push(agent.close);
  return { researcher, summariser, publisher };
}

async function registerAll(hub: HubClient, agents: Record<string, LoopbackAgent>) {
  const ids: Record<string, string> = {};
  for (const [name, agent] of Object.entries(agents)) ids[name] = (await hub.register(agent.url, { name })).id;
  return ids;
}

describe('a network of agents around a hub', () => {
  it('routes by keyword, by the LLM on a tie, by explicit handoff, and runs a three-hop chain', async () => {
    let pick = 'nobody';
    const fake = await FakeAnthropic.start({
      fallback: () => ({ text: `{"agent": "${pick}", "reason": "it speaks French"}` }),
    });
    cleanups.push(() => fake.close());
    const running = await startHub({
      port: 0,
      allowPrivateAgents: true,
      tickMs: 0,
      logger: silentLogger,
      tokens: ['secret'],
      llm: new AnthropicModel({ apiKey: 'test', maxRetries: 0, baseURL: fake.url }),
    });
    cleanups.push(running.close);
    const hub = new HubClient({ url: running.url, token: 'secret' });

    const { researcher, summariser, publisher } = await chainAgents();
    const german = await startLoopbackAgent({ Translation: 'Translates a text between languages.' }, () => 'übersetzt');
    const french = await startLoopbackAgent({ Translation: 'Translates a text between languages.' }, () => 'traduit');
    cleanups.push(german.close, french.close);
    const ids = await registerAll(hub, { researcher, summariser, publisher, german, french });
    expect(await hub.agents()).toHaveLength(5);
    await expect(new HubClient({ url: running.url }).register(german.url)).rejects.toThrow(/Unauthorized.*HTTP 401/);

    const byKeyword = await hub.route('research the best vector databases');
    expect(byKeyword).toMatchObject({
      by: 'keyword',
      agent: { name: 'researcher' },
      protocol: { name: 'Research topics' },
    });
    expect(byKeyword.reason).toContain('"research" in protocol "Research topics"');

    pick = ids.french!;
    const byLlm = await hub.route('a translation into another language');
    expect(byLlm).toMatchObject({
      by: 'llm',
      agent: { name: 'french' },
      reason: 'LLM pick (2 agents tied on keywords): it speaks French',
    });
    expect(fake.requests.at(-1)!.body.messages[0].content).toContain(ids.german);
    pick = 'an-agent-that-does-not-exist';
    expect(await hub.route('a translation into another language')).toMatchObject({
      by: 'keyword',
      agent: { id: [ids.german, ids.french].sort()[0] },
    });

    expect(await hub.route('research the best vector databases', 'publisher')).toMatchObject({
      by: 'handoff',
      agent: { name: 'publisher' },
      reason: 'explicit handoff to "publisher"',
    });
    await expect(hub.route('anything', 'nobody-by-that-name')).rejects.toThrow(/no such agent in the directory/);

    const run = await runChain(hub, 'research the best vector databases', LOCAL);
    expect(run.status).toBe('done');
    expect(run.hops.map((hop) => [hop.agentName, hop.by])).toEqual([
      ['researcher', 'keyword'],
      ['summariser', 'handoff'],
      ['publisher', 'handoff'],
    ]);
    expect(run.hops[2]!.result).toEqual({ published: true });
    expect(summariser.calls[0]).toEqual({
      goal: 'research the best vector databases',
      input: {
        facts: ['fact 1', 'fact 2'],
        goal: 'research the best vector databases',
        handoff: { next_agent: 'summariser' },
      },
    });
    expect(await hub.runs()).toEqual([]);
    expect((await hub.runs(true)).map((entry) => entry.id)).toEqual([run.id]);
  });

  it('syncs two hubs, and refuses a document a peer serves under the wrong hash', async () => {
    const a = await startHub({ port: 0, allowPrivateAgents: true, tickMs: 0, logger: silentLogger, rooms: false });
    cleanups.push(a.close);
    const good = document('Shipping quote', 'Quotes the price of shipping a parcel.');
    await new HubClient({ url: a.url }).publish(good);

    // A peer that lists a document and serves other bytes under its hash.
    const honest = document('Tax rates', 'Gives the VAT rate of a country.');
    const tamperedHash = hashText(honest);
    const liar = createServer((request, response) => {
      if (request.url?.startsWith('/protocols?'))
        return void response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ protocols: [{ hash: tamperedHash }, { hash: hashText(good) }] }));
      if (request.url === `/protocols/${tamperedHash}`)
        return void response.writeHead(200).end(honest.replace('VAT', 'any'));
      if (request.url === `/protocols/${hashText(good)}`) return void response.writeHead(200).end(good);
      response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => liar.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => liar.close(resolve)));
    const liarUrl = `http://127.0.0.1:${(liar.address() as { port: number }).port}`;

    const b = await startHub({
      port: 0,
      allowPrivateAgents: true,
      tickMs: 0,
      logger: silentLogger,
      rooms: false,
      peers: [a.url, liarUrl],
    });
    cleanups.push(b.close);
    const reports = await new HubClient({ url: b.url }).sync();
    expect(reports).toEqual({
      reports: [
        { peer: a.url, added: 1, known: 0, refused: [] },
        {
          peer: liarUrl,
          added: 0,
          known: 1,
          refused: [
            {
              hash: tamperedHash,
              reason: `served under ${tamperedHash} but hashes to ${hashText(honest.replace('VAT', 'any'))}`,
            },
          ],
        },
      ],
    });
    const client = new HubClient({ url: b.url });
    expect(await client.protocolText(hashText(good))).toBe(good);
    expect(await client.protocolText(tamperedHash)).toBeUndefined();
  });

  it('chains through an OAP agent (GET / card, POST /invoke envelope) and records its failure for a resume', async () => {
    const running = await startHub({ port: 0, allowPrivateAgents: true, tickMs: 0, logger: silentLogger });
    cleanups.push(running.close);
    const hub = new HubClient({ url: running.url });
    let healthy = true;
    // An OAP agent: no /wellknown; its card at GET /, its work at POST /invoke, the next agent in the envelope.
    const oap = await startOapPlanner(() =>
      healthy
        ? { body: { memory: { last_result: { plan: ['Lyon', 'Paris'] } }, handoff: { next_agent: 'publisher' } } }
        : { status: 500, body: { error: 'planner is down' } },
    );
    cleanups.push(oap.close);
    const { envelopes: invoked, url: oapUrl } = oap;
    const publisher = await startLoopbackAgent({ 'Publish notes': 'Publishes a note to the team wiki.' }, () => ({
      published: true,
    }));
    cleanups.push(publisher.close);
    const planner = await hub.register(oapUrl);
    expect(planner).toMatchObject({ name: 'planner', kind: 'oap', capabilities: ['itinerary planning'] });
    await hub.register(publisher.url, { name: 'publisher' });

    const run = await runChain(hub, 'plan an itinerary for a trip', LOCAL);
    expect(run.status).toBe('done');
    expect(run.hops.map((hop) => [hop.agentName, hop.by, hop.ok])).toEqual([
      ['planner', 'keyword', true],
      ['publisher', 'handoff', true],
    ]);
    expect(run.hops[0]!.result).toEqual({ plan: ['Lyon', 'Paris'] });
    expect(invoked[0]).toMatchObject({
      id: run.id,
      goal: 'plan an itinerary for a trip',
      memory: { last_result: null },
    });

    // The OAP agent fails: the chain records the failure and stays listed; once it is back, a resume finishes it.
    healthy = false;
    const failed = await runChain(hub, 'plan an itinerary for a trip', LOCAL);
    expect(failed.status).not.toBe('done');
    expect(failed.hops.at(-1)).toMatchObject({ agentName: 'planner', ok: false });
    expect((await hub.runs()).map((entry) => entry.id)).toEqual([failed.id]);
    healthy = true;
    const { resumeChain } = await import('../../src/hub/chains.js');
    const resumed = await resumeChain(hub, failed.id, LOCAL);
    expect(resumed.status).toBe('done');
    expect(resumed.hops.filter((hop) => hop.ok).map((hop) => hop.agentName)).toEqual(['planner', 'publisher']);
    expect(await hub.runs()).toEqual([]);
  });
});

const redisUrl = process.env.AGORA_TEST_REDIS_URL;
const describeRedis = redisUrl ? describe : describe.skip;

describeRedis('hub processes on Redis', () => {
  const prefix = `agora-test-hub:${randomUUID()}:`;
  afterAll(async () => {
    const redis = new Redis(redisUrl ?? '');
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
  });

  it('survives a SIGKILL of the hub mid-chain: agora resume finishes it without repeating a finished hop', async () => {
    const store = `${redisUrl}?prefix=${encodeURIComponent(prefix)}`;
    let first = await startHubCommand(['--store', store, '--allow-private-agents']);
    cleanups.push(async () => void first.child.kill('SIGKILL'));
    let killedHub = false;
    // The hub dies while the second hop is in flight: that hop answers, but its checkpoint cannot be written.
    const agents = await chainAgents(async () => {
      if (killedHub) return;
      killedHub = true;
      await first.stop('SIGKILL');
    });
    await registerAll(new HubClient({ url: first.url }), agents);

    const chain = await runCli([
      'chain',
      'research the best vector databases',
      '--hub',
      first.url,
      '--allow-private-agents',
    ]);
    expect(chain.code).toBe(1);
    expect(chain.stderr).toMatch(/the checkpoint could not be written/);
    const id = /chain ([\w-]{36})/.exec(chain.stderr)![1]!;

    // A new hub process on the same store: it lost nothing.
    first = await startHubCommand(['--store', store, '--allow-private-agents']);
    const runs = await runCli(['runs', '--hub', first.url]);
    expect(runs.stdout).toContain(`${id}  running  1 hop `);
    const resumed = await runCli(['resume', id, '--hub', first.url, '--json', '--allow-private-agents']);
    expect(resumed.code, resumed.stderr).toBe(0);
    const run = JSON.parse(resumed.stdout) as { status: string; hops: { agentName: string }[] };
    expect(run.status).toBe('done');
    expect(run.hops.map((hop) => hop.agentName)).toEqual(['researcher', 'summariser', 'publisher']);
    // The finished hop ran once; the hop in flight at the crash ran again, as it may.
    expect(agents.researcher.calls).toHaveLength(1);
    expect(agents.summariser.calls).toHaveLength(2);
    expect(agents.publisher.calls).toHaveLength(1);
    expect((await runCli(['runs', '--hub', first.url])).stdout).toBe('no unfinished chains\n');
    // Two hub processes and five CLI runs: more than the default 30 s on a busy 2-core machine.
  }, 90_000);
});
