// The behaviour every LLM provider must give the framework, run against each fake API through its real SDK on
// loopback (test/llm/providers.test.ts): the same scripts, the same assertions, only the wire differs.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startAgent } from '../../src/agent.js';
import { RoutineGenerator } from '../../src/generation/generate.js';
import { RoutineTypeChecker } from '../../src/generation/checks/typecheck.js';
import { HubClient } from '../../src/hub/client.js';
import { startHub } from '../../src/hub/server.js';
import { ROOM_DOCUMENT } from '../../src/hub/rooms/document.js';
import type { LanguageModel } from '../../src/llm/model.js';
import { converse } from '../../src/llm/tool-loop.js';
import { silentLogger } from '../../src/log.js';
import { FileMemory } from '../../src/memory/file.js';
import { hashText } from '../../src/protocol/document.js';
import { Sender } from '../../src/sender/sender.js';
import {
  FakeAnthropic,
  FakeOpenAI,
  modelForFake,
  startTestAgent,
  type FakeLlm,
  type FakeReply,
  type FakeRequest,
} from '../../src/testing/index.js';
import { defineTool } from '../../src/tool/define.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';
import { cleanupStack, DISTANCE, km } from '../helpers/sender.js';

/** Starts a fake of one provider's API. */
export function startFake(
  provider: 'anthropic' | 'openai',
  options: Parameters<typeof FakeAnthropic.start>[0] = {},
): Promise<FakeLlm> {
  return provider === 'openai' ? FakeOpenAI.start(options) : FakeAnthropic.start(options);
}

const forecast = defineTool({
  name: 'get_forecast',
  description: 'Forecast for a city',
  input: z.object({ city: z.string() }),
  run: ({ city }) => ({ city, sky: 'sunny' }),
});

const WEATHER =
  '---\nname: Weather\ndescription: Weather for a city.\nmultiround: false\n---\n\nThe sender sends JSON {"city": string}. The receiver replies JSON {"sky": string}.\n';

// The routine the receiver's LLM writes for the distance PD, as a good LLM would.
const DISTANCE_DEFINED = [
  "import { defineRoutine } from 'agora-agents';",
  "import { z } from 'zod';",
  'export default defineRoutine({',
  '  input: z.object({ miles: z.number() }),',
  '  output: z.object({ km: z.number() }),',
  '  handle: (body) => ({ km: Math.round(body.miles * 1609.344) / 1000 }),',
  '});',
].join('\n');

/** A receiving agent's LLM in a negotiation: asks for one change, then accepts; judges PDs; answers under them; writes the routine. */
export function peerBrain(request: FakeRequest): FakeReply {
  if (request.system.includes('negotiates a protocol document (PD) with you'))
    return request.turns === 1 ? 'Please round km to 3 decimals.' : 'I accept this protocol.';
  if (request.system.includes('Decide whether you can honour it')) return 'I can convert units.\nYES';
  if (request.system.includes('queries you under this protocol document'))
    return JSON.stringify({ km: km(JSON.parse(request.lastUserText).miles) });
  if (request.system.includes('You write routines')) return `\`\`\`ts\n${DISTANCE_DEFINED}\n\`\`\``;
  if (request.system.includes('You write test queries')) return JSON.stringify([{ miles: 1 }, { miles: 2.5 }]);
  return { status: 500 };
}

/** A sending agent's LLM: proposes, revises, then emits the final document; writes the task's query and reads the reply. */
export function senderBrain(request: FakeRequest): FakeReply {
  const input = /Input \(JSON\): (.*)/.exec(request.lastUserText)?.[1];
  if (request.system.includes('You negotiate a protocol document')) {
    if (request.turns === 1) return `Proposal:\n${DISTANCE.replace(', rounded to 3 decimals', '')}`;
    if (request.turns === 3) return `Revised:\n${DISTANCE}`;
    return `<FINALPROTOCOL>\n${DISTANCE}\n</FINALPROTOCOL>`;
  }
  if (request.system.includes('Write the body of the query'))
    return JSON.stringify({ miles: JSON.parse(input!).miles });
  if (request.system.includes('turn its reply into the JSON value'))
    return JSON.stringify({ km: Number(/"km":\s*([\d.]+)/.exec(request.lastUserText)?.[1]) });
  return { status: 500 };
}

/** Two agents negotiate a protocol for a typed task, each on its own model; the receiver then writes its routine. */
export async function negotiateAndWriteRoutine(
  peerLlm: LanguageModel,
  senderLlm: LanguageModel,
  cleanup: ReturnType<typeof cleanupStack>,
): Promise<{ km: unknown; routine: string; peerDir: string; senderDir: string }> {
  const peerDir = await cleanup.tempDir('agora-peer-');
  const typeChecker = new RoutineTypeChecker();
  cleanup.push(() => typeChecker.close());
  const peer = await startAgent({
    dir: peerDir,
    port: 0,
    host: '127.0.0.1',
    llm: peerLlm,
    logger: silentLogger,
    watch: false,
    routineThreshold: 1,
    autoApprove: true,
    dashboard: false,
  });
  cleanup.push(() => peer.close());
  const senderDir = await cleanup.tempDir('agora-sender-');
  const sender = new Sender({
    llm: senderLlm,
    dir: senderDir,
    logger: silentLogger,
    thresholds: { lookForProtocolFrom: 1, negotiateFrom: 1 },
    hub: null,
  });
  const convert = sender.task({
    name: 'Convert miles',
    description: 'Convert a distance in miles to kilometres.',
    input: z.object({ miles: z.number() }),
    output: z.object({ km: z.number() }),
  });
  const result = await convert({ miles: 5 }, { target: peer.url });
  await peer.generator?.idle();
  const status = (await new FileMemory(join(peerDir, '.agora')).get(`routines/${hashText(DISTANCE)}/status`)) as
    { status: string; file?: string } | undefined;
  expect(status, JSON.stringify(status)).toMatchObject({ status: 'approved' });
  return { km: result.km, routine: await readFile(join(peerDir, status!.file!), 'utf8'), peerDir, senderDir };
}

/** The contract: every LLM path of the framework, against one provider's fake. */
export function llmProviderContract(provider: 'anthropic' | 'openai'): void {
  describe(`every LLM path on ${provider}`, { timeout: 60_000 }, () => {
    const cleanup = cleanupStack();
    let fake: FakeLlm;

    beforeAll(async () => {
      fake = await startFake(provider);
      cleanup.push(() => fake.close());
    });
    afterEach(() => fake.reset());
    afterAll(() => cleanup.run());

    it('answers natural language, calling a tool, sending back its result, and counting the tokens of both calls', async () => {
      const folder = await makeAgentFolder();
      cleanup.push(folder.cleanup);
      const agent = await startTestAgent({
        dir: folder.dir,
        name: 'weather',
        tools: [forecast],
        fake,
        logger: silentLogger,
      });
      cleanup.push(agent.close);
      fake.push(
        { toolUse: [{ name: 'get_forecast', input: { city: 'Paris' } }], usage: { inputTokens: 30, outputTokens: 7 } },
        (request) => ({
          text: `Paris: ${JSON.parse(request.lastUserText).sky}.`,
          usage: { inputTokens: 50, outputTokens: 4 },
        }),
      );
      expect(await agent.query('Weather in Paris?')).toEqual({ status: 'success', body: 'Paris: sunny.' });
      expect(fake.requests).toHaveLength(2);
      expect(fake.requests[0]!.system).toContain('You are weather');
      expect(fake.requests[0]!.lastUserText).toBe('Weather in Paris?');
      expect(fake.requests[1]!.turns).toBeGreaterThan(fake.requests[0]!.turns);
      const metrics = await agent.receiver.metrics();
      expect(metrics).toContain(
        'agora_llm_tokens_total{direction="input",protocol="natural_language",purpose="answer"} 80',
      );
      expect(metrics).toContain(
        'agora_llm_tokens_total{direction="output",protocol="natural_language",purpose="answer"} 11',
      );
      expect(metrics).toContain(`agora_llm_info{provider="${provider}",model="${agent.receiver.llm!.model}"} 1`);
    });

    it('judges an unknown protocol suitable, answers under it, and repairs one reply that is not JSON', async () => {
      const folder = await makeAgentFolder();
      cleanup.push(folder.cleanup);
      const agent = await startTestAgent({ dir: folder.dir, fake, logger: silentLogger });
      cleanup.push(agent.close);
      fake.push('I know the weather.\nYES', 'It is sunny!', '{"sky": "sunny"}');
      expect(await agent.query({ city: 'Paris' }, { protocol: WEATHER })).toEqual({
        status: 'success',
        body: { sky: 'sunny' },
      });
      expect(fake.requests[0]!.lastUserText).toContain('name: Weather');
      expect(fake.requests[1]!.system).toContain('The receiver replies JSON {"sky": string}');
      expect(fake.requests[2]!.lastUserText).toMatch(/^Your reply is not valid JSON/);

      fake.reset();
      fake.push('I cannot tell the tides.\nNO');
      const tides = WEATHER.replace('name: Weather', 'name: Tides');
      expect(await agent.query({ port: 'Brest' }, { protocol: tides })).toEqual({
        status: 'failure',
        error: 'Unsupported protocol',
      });
    });

    it("answers a room's turn as an LLM participant, under the room document", async () => {
      const folder = await makeAgentFolder({ 'protocols/room.md': ROOM_DOCUMENT });
      cleanup.push(folder.cleanup);
      const agent = await startTestAgent({ dir: folder.dir, name: 'alice', fake, logger: silentLogger });
      cleanup.push(agent.close);
      fake.setFallback((request) =>
        request.system.includes('queries you under this protocol document')
          ? JSON.stringify({ message: `alice heard ${JSON.parse(request.lastUserText).transcript.length}` })
          : { status: 500 },
      );
      const turn = {
        room: 'r1',
        topic: 'Lunch',
        you: 'alice',
        participants: ['alice', 'bob'],
        turn: 1,
        why: 'opening',
        transcript: [{ kind: 'person', name: 'eve', text: 'Pizza?' }],
      };
      const reply = await agent.query(turn, { protocol: 'protocols/room.md' });
      fake.setFallback({ status: 500 });
      expect(reply).toMatchObject({ status: 'success', body: { message: 'alice heard 1' } });
    });

    it('streams a reply in pieces, each handed out as it comes, with its usage', async () => {
      const model = modelForFake(fake);
      fake.push({
        text: 'Hello there, world',
        stream: { chunks: ['Hello ', 'there, ', 'world'] },
        usage: { inputTokens: 9, outputTokens: 3 },
      });
      const pieces: string[] = [];
      const result = await converse(model, {
        system: 'Be brief.',
        messages: [{ role: 'user', content: 'Hi' }],
        onText: (piece) => pieces.push(piece),
      });
      expect(pieces).toEqual(['Hello ', 'there, ', 'world']);
      expect(result).toMatchObject({
        text: 'Hello there, world',
        usage: { inputTokens: 9, outputTokens: 3 },
        calls: 1,
      });
      expect(fake.requests[0]!.body.stream).toBe(true);
    });

    it('retries a 429 after its Retry-After, gives up on a 401 at once, and bounds a stalled attempt', async () => {
      fake.push({ status: 429, headers: { 'retry-after': '0' } }, 'after the wait');
      const hello = { system: '', messages: [{ role: 'user' as const, content: 'Hi' }] };
      expect(
        (
          await modelForFake(fake, {
            anthropic: { maxRetries: 2, retryBaseMs: 10_000 },
            openai: { maxRetries: 2, retryBaseMs: 10_000 },
          }).complete(hello)
        ).text,
      ).toBe('after the wait');
      expect(fake.requests).toHaveLength(2);
      fake.push({ status: 401 });
      await expect(
        modelForFake(fake, { anthropic: { maxRetries: 2 }, openai: { maxRetries: 2 } }).complete(hello),
      ).rejects.toMatchObject({ code: 'LLM_UNAVAILABLE' });
      expect(fake.requests).toHaveLength(3);
      fake.push({ stall: true });
      const stalled = await modelForFake(fake, { anthropic: { timeoutMs: 200 }, openai: { timeoutMs: 200 } })
        .complete(hello)
        .catch((error: unknown) => error);
      expect(stalled).toMatchObject({ code: 'LLM_UNAVAILABLE', cause: { name: 'AttemptTimeoutError' } });
    });

    it('routes a goal keywords leave tied through the hub LLM', async () => {
      const running = await startHub({
        port: 0,
        allowPrivateAgents: true,
        tickMs: 0,
        logger: silentLogger,
        tokens: ['secret'],
        llm: modelForFake(fake),
      });
      cleanup.push(running.close);
      const hub = new HubClient({ url: running.url, token: 'secret' });
      const ids: string[] = [];
      for (const name of ['german', 'french']) {
        const folder = await makeAgentFolder({
          'protocols/translate.md':
            '---\nname: Translation\ndescription: Translates a text between languages.\nmultiround: false\n---\n\nText in, text out.\n',
          'routines/translate.ts': `export default () => '${name}';\n`,
        });
        cleanup.push(folder.cleanup);
        const agent = await startTestAgent({ dir: folder.dir, llm: null, logger: silentLogger });
        cleanup.push(agent.close);
        ids.push((await hub.register(agent.url, { name })).id);
      }
      fake.setFallback(() => ({ text: `{"agent": "${ids[1]}", "reason": "it speaks French"}` }));
      const decision = await hub.route('a translation into another language');
      fake.setFallback({ status: 500 });
      expect(decision).toMatchObject({ by: 'llm', agent: { name: 'french' } });
      expect(fake.requests.at(-1)!.lastUserText).toContain(ids[0]);
    });

    it('negotiates a protocol for a typed task on both sides, and the receiver writes, checks and serves its routine', async () => {
      const senderFake = await startFake(provider, { fallback: senderBrain });
      cleanup.push(() => senderFake.close());
      fake.setFallback(peerBrain);
      const { km: converted, routine } = await negotiateAndWriteRoutine(
        modelForFake(fake),
        modelForFake(senderFake),
        cleanup,
      );
      fake.setFallback({ status: 500 });
      expect(converted).toBe(km(5));
      expect(routine).toContain('Math.round(body.miles * 1609.344) / 1000');
    });
  });
}
