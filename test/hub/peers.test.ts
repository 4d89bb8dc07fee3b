// The hub speaks Agora, OAP, ROAR and A2A: registration tells each kind from what it serves, routing finds them by
// their capabilities and skills, chains reach each through its client with its protocol's result and handoff rules.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runChain } from '../../src/hub/chains.js';
import { HubClient } from '../../src/hub/client.js';
import { startHub } from '../../src/hub/server.js';
import { silentLogger } from '../../src/log.js';
import { hashText } from '../../src/protocol/document.js';
import { startA2aServer } from '../helpers/a2a-server.js';
import { startOapPlanner } from '../helpers/oap-agent.js';
import { oapTaskEnvelopeSent } from '../helpers/oap-schema.js';
import { startRoarServer } from '../helpers/roar-server.js';
import { startLoopbackAgent } from './_agents.js';

// The agents here listen on loopback: the hops' address guard lets them through, as the hub's setting does.
const LOCAL = { allowPrivateAgents: true };

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function hub(): Promise<HubClient> {
  const running = await startHub({ port: 0, allowPrivateAgents: true, tickMs: 0, logger: silentLogger });
  cleanups.push(running.close);
  return new HubClient({ url: running.url });
}

describe('the hub and the other protocols', () => {
  it('registers a ROAR agent and an A2A agent, routes goals to them by capability and skill, and chains through both', async () => {
    const roar = await startRoarServer({
      name: 'reviewer',
      description: 'An agent of the ROAR network.',
      capabilities: ['code-review', 'python'],
      answer: (task) => ({
        review: `looks fine: ${task.split('\n')[0]}`,
        handoff: { next_agent: 'translator', reason: 'the team reads French' },
      }),
    });
    const a2a = await startA2aServer({
      name: 'translator',
      description: 'An agent of the A2A network.',
      skills: [{ name: 'Translate', description: 'Translates text to French', tags: ['translation', 'french'] }],
      answer: (input) => `traduit: ${input.split('\n')[0]}`,
    });
    cleanups.push(roar.close, a2a.close);
    const client = await hub();
    expect(await client.register(roar.url)).toMatchObject({
      name: 'reviewer',
      kind: 'roar',
      capabilities: ['code-review', 'python'],
    });
    expect(await client.register(a2a.url)).toMatchObject({
      name: 'translator',
      kind: 'a2a',
      capabilities: ['Translate', 'translation', 'french'],
    });

    expect((await client.route('a python code-review of this diff')).agent.name).toBe('reviewer');
    expect((await client.route('french translation of the release notes')).agent.name).toBe('translator');

    const run = await runChain(client, 'a python code-review of this diff', LOCAL);
    expect(run.status).toBe('done');
    expect(run.hops.map((hop) => [hop.agentName, hop.by, hop.ok])).toEqual([
      ['reviewer', 'keyword', true],
      ['translator', 'handoff', true],
    ]);
    expect(run.hops[0]!.result).toMatchObject({ review: 'looks fine: a python code-review of this diff' });
    expect(run.hops[1]!.result).toBe('traduit: a python code-review of this diff');
    // The A2A agent got the goal and what the ROAR agent found.
    expect(a2a.received[0]).toMatch(/What the previous agent found:\n\{.*"review":"looks fine: a python/);
  });

  it('registers an a2a-js 1.0 agent that keeps its 0.3 compatibility layer on (its card read with A2A-Version: 1.0)', async () => {
    const a2a = await startA2aServer({
      name: 'bilingual',
      description: 'Speaks both A2A versions.',
      skills: [{ name: 'Summarise', description: 'Summarises text', tags: ['summary'] }],
      answer: () => 'ok',
      legacyCompat: true,
    });
    cleanups.push(a2a.close);
    const client = await hub();
    expect(await client.register(a2a.url)).toMatchObject({
      name: 'bilingual',
      kind: 'a2a',
      capabilities: ['Summarise', 'summary'],
    });
  });

  it("sends OAP agents a full TaskEnvelope and takes the reply's result over memory.last_result", async () => {
    // Memory carried forward still holds the previous hop's result; this hop's own is `result`.
    const oap = await startOapPlanner((envelope) => ({
      body: { ...envelope, result: { plan: ['Lyon', 'Paris'] }, memory: { ...(envelope.memory as object) } },
    }));
    const { envelopes } = oap;
    cleanups.push(oap.close);
    const scout = await startLoopbackAgent({ 'Scout destinations': 'Finds destinations for a trip.' }, () => ({
      destinations: ['Lyon'],
      handoff: { next_agent: 'planner' },
    }));
    cleanups.push(scout.close);
    const client = await hub();
    await client.register(oap.url);
    await client.register(scout.url, { name: 'scout' });

    const run = await runChain(client, 'scout destinations for a trip', LOCAL);
    expect(run.hops.map((hop) => hop.agentName)).toEqual(['scout', 'planner']);
    expect(run.hops[1]!.result).toEqual({ plan: ['Lyon', 'Paris'] });
    const envelope = oapTaskEnvelopeSent.parse(envelopes[0]);
    // oap/envelope.py: `steps_taken` is a list of Step {agent_id, action, result, timestamp}; `version` defaults to
    // "0.1".
    const scouted = {
      agent_id: 'scout',
      action: 'handed off',
      result: run.hops[0]!.result,
      timestamp: new Date(run.hops[0]!.finishedAt).toISOString(),
    };
    expect(envelope).toEqual({
      id: run.id,
      version: '0.1',
      goal: 'scout destinations for a trip',
      constraints: {},
      memory: { last_result: run.hops[0]!.result },
      steps_taken: [scouted],
      handoff: null,
    });
    expect(envelope.memory.last_result).toMatchObject({ destinations: ['Lyon'] });
  });

  it("fails a hop whose reply does not fit its protocol document's reply, and passes one that does", async () => {
    // The repository's unit-conversion document: "The receiver replies JSON `{"value": number, "unit": string}`".
    const text = readFileSync(resolve(import.meta.dirname, '../../protocols/unit-conversion.md'), 'utf8');
    const hash = hashText(text);
    let body: unknown = { converted: 'six miles' };
    const converter = createServer((request, response) => {
      const json = (value: unknown) =>
        void response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (request.url === '/wellknown') return json({ [hash]: [`/protocols/${hash}`] });
      if (request.url === `/protocols/${hash}`)
        return void response.writeHead(200, { 'content-type': 'text/plain' }).end(text);
      request.resume().on('end', () => json({ status: 'success', body }));
    });
    await new Promise<void>((done) => converter.listen(0, '127.0.0.1', done));
    cleanups.push(() => new Promise((done) => converter.close(done)));
    const client = await hub();
    await client.register(`http://127.0.0.1:${(converter.address() as { port: number }).port}`, { name: 'converter' });
    const run = await runChain(client, 'unit conversion of 10 km to miles', LOCAL);
    expect(run.status).toBe('failed');
    expect(run.hops[0]).toMatchObject({ agentName: 'converter', ok: false });
    expect(run.hops[0]!.error).toMatch(/does not match "Unit conversion"'s reply \(the reply\.value is missing\)/);
    body = { value: 6.21371, unit: 'mi' };
    expect((await runChain(client, 'unit conversion of 10 km to miles', LOCAL)).status).toBe('done');
  });

  it('lets a ROAR agent and an A2A agent take turns in a room, each in its own protocol', async () => {
    const roar = await startRoarServer({
      name: 'critic',
      description: 'Criticises ideas.',
      capabilities: ['critique'],
      answer: (task) => `critic on turn ${/\n\w+: /.test(task) ? 'after others' : 'first'}`,
    });
    const a2a = await startA2aServer({
      name: 'optimist',
      description: 'Sees the bright side.',
      skills: [],
      answer: (input) =>
        input.includes('critic: critic on turn first') ? 'optimist heard the critic' : 'optimist alone',
    });
    cleanups.push(roar.close, a2a.close);
    const client = await hub();
    await client.register(roar.url);
    await client.register(a2a.url);
    const room = await client.createRoom({
      topic: 'ship on Friday?',
      participants: ['critic', 'optimist'],
      maxTurns: 3,
      turnTimeoutMs: 5000,
    });
    expect(room.participants.map((participant) => [participant.name, participant.kind])).toEqual([
      ['critic', 'roar'],
      ['optimist', 'a2a'],
    ]);
    for await (const event of client.watch(room.id)) if (event.type === 'flow_completed') break;
    const done = await client.room(room.id);
    expect(done.transcript.map((entry) => [entry.speaker, entry.kind, entry.text])).toEqual([
      ['critic', 'agent', 'critic on turn first'],
      ['optimist', 'agent', 'optimist heard the critic'],
      ['critic', 'agent', 'critic on turn after others'],
    ]);
    expect(roar.received[0]!.payload).toMatchObject({ task: expect.stringContaining('Topic: ship on Friday?') });
  });
});
