// Tokens per hop: an agent that answers a turn with its LLM reports the turn's usage in an `Agora-Usage` header (when
// its operator turns reporting on); the hub's chain records it on that hop, a room on that turn. The LLM is the real
// openai SDK on a fake Chat Completions API.
import { afterEach, describe, expect, it } from 'vitest';
import { formatUsage, parseUsage } from '../../src/_usage.js';
import { agoraMount } from '../../src/agora/handler.js';
import { compose } from '../../src/edge/mount.js';
import { listen } from '../../src/edge/node.js';
import { runChain } from '../../src/hub/chains.js';
import { ROOM_DOCUMENT } from '../../src/hub/rooms/document.js';
import type { RoomRecord } from '../../src/hub/rooms/records.js';
import { HubClient } from '../../src/hub/client.js';
import { startHub } from '../../src/hub/server.js';
import { silentLogger } from '../../src/log.js';
import { hashText } from '../../src/protocol/document.js';
import { Receiver } from '../../src/receiver.js';
import { FakeOpenAI, modelForFake } from '../../src/testing/index.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';
import { document, startLoopbackAgent } from './_agents.js';
import { readRoomEvents, startParticipants } from './rooms/_agents.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const SUMMARISE = document('Summarise text', 'Writes a short summary of facts.');

/** An agent whose protocol is answered by its LLM (no routine), its Agora wire reporting usage or not. */
async function llmAgent(fake: FakeOpenAI, reportUsage: boolean | undefined, multiround = false, doc = SUMMARISE) {
  const text = multiround ? doc.replace('multiround: false', 'multiround: true') : doc;
  const folder = await makeAgentFolder({ 'protocols/summarise.md': text });
  const receiver = await Receiver.start({
    dir: folder.dir,
    watch: false,
    logger: silentLogger,
    llm: modelForFake(fake, { openai: { model: 'small' } }),
  });
  const options = { logger: silentLogger, ...(reportUsage !== undefined ? { reportUsage } : {}) };
  const server = await listen(compose([agoraMount(receiver, options)], { logger: silentLogger }), {
    port: 0,
    host: '127.0.0.1',
    logger: silentLogger,
  });
  cleanups.push(folder.cleanup, () => receiver.close(), server.close);
  return { url: server.url, hash: hashText(text) };
}

async function startFake() {
  const fake = await FakeOpenAI.start({
    fallback: {
      text: JSON.stringify({ summary: 'two facts', handoff: { next_agent: 'publisher' } }),
      usage: { inputTokens: 321, outputTokens: 45 },
    },
  });
  cleanups.push(() => fake.close());
  return fake;
}

describe('LLM usage per hop', () => {
  it("records the tokens and model of the hop its LLM answered, and none on the routines' hops", async () => {
    const fake = await startFake();
    const running = await startHub({ port: 0, allowPrivateAgents: true, tickMs: 0, logger: silentLogger });
    cleanups.push(running.close);
    const hub = new HubClient({ url: running.url });
    const researcher = await startLoopbackAgent({ 'Research topics': 'Finds facts about a topic.' }, () => ({
      facts: ['fact 1', 'fact 2'],
      handoff: { next_agent: 'summariser' },
    }));
    const publisher = await startLoopbackAgent({ 'Publish notes': 'Publishes a note to the wiki.' }, () => ({
      published: true,
    }));
    cleanups.push(researcher.close, publisher.close);
    const summariser = await llmAgent(fake, true);
    await hub.register(researcher.url, { name: 'researcher' });
    await hub.register(summariser.url, { name: 'summariser' });
    await hub.register(publisher.url, { name: 'publisher' });

    const run = await runChain(hub, 'research topics about vector databases', { allowPrivateAgents: true });
    expect(run.status, run.error).toBe('done');
    expect(run.hops.map((hop) => hop.agentName)).toEqual(['researcher', 'summariser', 'publisher']);
    expect(fake.totals()).toEqual({ calls: 1, inputTokens: 321, outputTokens: 45 });
    expect(run.hops[1]!.usage).toEqual({ inputTokens: 321, outputTokens: 45, model: 'small' });
    expect(run.hops[0]!.usage).toBeUndefined();
    expect(run.hops[2]!.usage).toBeUndefined();
    // The hub's record (its API, what its dashboard reads) carries them too.
    const kept = await hub.getRun(run.id);
    expect(kept?.hops.map((hop) => hop.usage)).toEqual([
      undefined,
      { inputTokens: 321, outputTokens: 45, model: 'small' },
      undefined,
    ]);
  });

  it('reports nothing by default, and on POST / and the next turn when turned on', async () => {
    const fake = await startFake();
    const quiet = await llmAgent(fake, undefined);
    const post = (url: string, body: unknown) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const unreported = await post(`${quiet.url}/`, { protocolHash: quiet.hash, body: { goal: 'x' } });
    expect(unreported.status).toBe(200);
    expect(unreported.headers.get('agora-usage')).toBeNull();

    const reporting = await llmAgent(fake, true, true);
    const first = await post(`${reporting.url}/`, {
      protocolHash: reporting.hash,
      body: { goal: 'x' },
      multiround: true,
    });
    expect(first.status).toBe(200);
    expect(first.headers.get('agora-usage')).toBe('input_tokens=321, output_tokens=45, model="small"');
    const { conversationId } = (await first.json()) as { conversationId: string };
    const next = await post(`${reporting.url}/conversations/${conversationId}`, { body: { goal: 'y' } });
    expect(next.status).toBe(200);
    expect(parseUsage(next.headers.get('agora-usage'))).toEqual({ inputTokens: 321, outputTokens: 45, model: 'small' });
  });

  it("counts a room turn's tokens as its agent reported them", async () => {
    const fake = await startFake();
    fake.setFallback({ text: JSON.stringify({ message: 'I agree' }), usage: { inputTokens: 200, outputTokens: 22 } });
    const speaker = await llmAgent(fake, true, true, ROOM_DOCUMENT);
    const others = await startParticipants(['plain']);
    cleanups.push(others.close);
    const running = await startHub({ port: 0, allowPrivateAgents: true, tickMs: 0, logger: silentLogger });
    cleanups.push(running.close);
    const created = await fetch(`${running.url}/rooms`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ topic: 'costs', participants: [speaker.url, others.agents[0]!.url], maxTurns: 2 }),
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    await readRoomEvents(running.url, id, {
      stop: (events) => events.some((event) => event.type === 'flow_completed'),
    });
    const room = (await (await fetch(`${running.url}/rooms/${id}`)).json()) as RoomRecord;
    const [first, second] = room.transcript;
    expect(first).toMatchObject({ kind: 'agent', text: 'I agree', tokens: 222 });
    // The routine's turn reported nothing: its tokens are the room's estimate from the texts.
    expect(second!.kind).toBe('agent');
    expect(second!.tokens).not.toBe(222);
    expect(room.tokens).toBe(222 + second!.tokens);
  });

  it("reads a peer's header without trusting it", () => {
    expect(parseUsage('input_tokens=1, output_tokens=2')).toEqual({ inputTokens: 1, outputTokens: 2 });
    expect(parseUsage('output_tokens=2, input_tokens=1, cost=3, model="m"')).toEqual({
      inputTokens: 1,
      outputTokens: 2,
      model: 'm',
    });
    for (const bad of [
      undefined,
      '',
      'input_tokens=1',
      'input_tokens=-1, output_tokens=2',
      'input_tokens=1.5, output_tokens=2',
      'input_tokens=99999999999999, output_tokens=2',
      'input_tokens=1, output_tokens=2, model=<script>',
      `input_tokens=1, output_tokens=2, model="${'m'.repeat(400)}"`,
    ])
      expect(parseUsage(bad), String(bad)).toBeUndefined();
    // A model's name travels without quotes, backslashes or control characters, and comes back the same.
    const header = formatUsage({ inputTokens: 3, outputTokens: 4, model: 'a"b\\c\nd' });
    expect(header).toBe('input_tokens=3, output_tokens=4, model="abcd"');
    expect(parseUsage(header)).toEqual({ inputTokens: 3, outputTokens: 4, model: 'abcd' });
  });
});
