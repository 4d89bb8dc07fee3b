// One trace across processes: `agora chain` through `agora hub` over three `agora serve` agents, each in its own
// process and all tracing to one OTLP receiver, yields one tree of spans (the CLI's chain, the hub's routing, each
// agent's request, turn, routine or LLM call with its tokens); a room run by the hub puts each turn under its span.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LLM_ENV } from '../../src/llm/providers.js';
import { FakeOpenAI } from '../../src/testing/index.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';
import { runCli, startHubCommand, startServe, type StartedCommand } from '../helpers/cli.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';

const NO_KEYS = Object.fromEntries(LLM_ENV.map((name) => [name, '']));

const doc = (name: string, description: string) =>
  `---\nname: ${name}\ndescription: ${description}\nmultiround: false\n---\n\nThe sender sends JSON {"goal": string, "input": any}. The receiver replies with JSON.\n`;

const routine = (reply: unknown) => `export default function () { return ${JSON.stringify(reply)}; }\n`;

let receiver: OtlpReceiver;
let fake: FakeOpenAI;
let hub: StartedCommand;
const started: StartedCommand[] = [];
const cleanups: (() => Promise<unknown>)[] = [];

/** The environment of a traced process: spans sent at once (a short batch delay) as JSON to the receiver. */
function traced(service: string): NodeJS.ProcessEnv {
  return {
    ...NO_KEYS,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_SERVICE_NAME: service,
    OTEL_BSP_SCHEDULE_DELAY: '100',
  };
}

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  fake = await FakeOpenAI.start({
    fallback: () => JSON.stringify({ summary: 'two facts, summed up', handoff: { next_agent: 'publisher' } }),
  });
  const folders = {
    researcher: await makeAgentFolder({
      'protocols/research.md': doc('Research topics', 'Finds facts about a topic and hands them on.'),
      'routines/research.ts': routine({ facts: ['fact 1', 'fact 2'], handoff: { next_agent: 'summariser' } }),
    }),
    summariser: await makeAgentFolder({
      'protocols/summarise.md': doc('Summarise text', 'Writes a short summary of facts.'),
    }),
    publisher: await makeAgentFolder({
      'protocols/publish.md': doc('Publish notes', 'Publishes a note to the team wiki.'),
      'routines/publish.ts': routine({ published: true }),
    }),
  };
  hub = await startHubCommand(['--allow-private-agents'], { env: traced('hub') });
  started.push(hub);
  for (const [name, folder] of Object.entries(folders)) {
    cleanups.push(folder.cleanup);
    const llm =
      name === 'summariser'
        ? ['--llm', 'openai', '--llm-base-url', fake.url, '--model', 'small', '--report-usage']
        : ['--report-usage'];
    const agent = await startServe([folder.dir, '--port', '0', '--host', '127.0.0.1', ...llm], { env: traced(name) });
    started.push(agent);
    const registered = await runCli(['hub', 'register', agent.url, '--hub', hub.url, '--name', name]);
    expect(registered.code, registered.stderr).toBe(0);
  }
}, 120_000);

afterAll(async () => {
  for (const command of started.splice(0).reverse()) await command.stop();
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await fake?.close();
  await receiver?.close();
});

/** Waits until `ready` holds of the spans received (the processes send theirs every 100 ms). */
async function spansWhen(ready: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]> {
  for (let waited = 0; waited < 20_000 && !ready(receiver.spans); waited += 100)
    await new Promise((resolve) => setTimeout(resolve, 100));
  return receiver.spans;
}

describe('a traced network', () => {
  it('makes one trace of a chain over three agents, across five processes, with the LLM tokens', async () => {
    const chain = await runCli(
      ['chain', 'research the best vector databases', '--hub', hub.url, '--allow-private-agents'],
      {
        env: traced('chain-cli'),
      },
    );
    expect(chain.code, chain.stderr).toBe(0);
    // The summariser's LLM turn reported its tokens to the chain (the fake's totals); the routines' hops none.
    const { inputTokens, outputTokens } = fake.totals();
    expect(chain.stderr).toMatch(
      new RegExp(`summariser .* ok \\[[\\d.]+ m?s, ${inputTokens} in / ${outputTokens} out tokens \\(small\\)\\]`),
    );
    expect(chain.stderr).toMatch(/researcher .* ok \[[\d.]+ m?s, tokens —\]/);
    const root = receiver.spans.find((span) => span.name === 'agora.chain' && span.service === 'chain-cli');
    // The CLI sent its spans before it exited.
    expect(root, receiver.spans.map((span) => `${span.service}:${span.name}`).join(', ')).toBeDefined();
    const services = ['chain-cli', 'hub', 'researcher', 'summariser', 'publisher'];
    const spans = (
      await spansWhen((all) => {
        const inTrace = all.filter((span) => span.traceId === root!.traceId);
        return services.every((service) => inTrace.some((span) => span.service === service));
      })
    ).filter((span) => span.traceId === root!.traceId);
    expect(new Set(spans.map((span) => span.service))).toEqual(new Set(services));
    // One tree: every span but the root has its parent in the trace.
    const ids = new Set(spans.map((span) => span.spanId));
    expect(spans.filter((span) => span !== root && !ids.has(span.parentSpanId))).toEqual([]);
    expect(root!.parentSpanId).toBe('');
    // Three hops under the chain, each agent's turn under its hop (through the client and the agent's server span).
    const hops = spans.filter((span) => span.name === 'agora.hop');
    expect(hops.map((hop) => hop.attributes['agora.hop.agent.name'])).toEqual(
      expect.arrayContaining(['researcher', 'summariser', 'publisher']),
    );
    const parentOf = (span: ReceivedSpan) => spans.find((candidate) => candidate.spanId === span.parentSpanId);
    const ancestors = (span: ReceivedSpan) => {
      const found: ReceivedSpan[] = [];
      for (let at = parentOf(span); at; at = parentOf(at)) found.push(at);
      return found;
    };
    for (const service of ['researcher', 'summariser', 'publisher']) {
      const turn = spans.find((span) => span.service === service && span.name === 'agora.turn')!;
      const hop = hops.find((candidate) => candidate.attributes['agora.hop.agent.name'] === service)!;
      expect(ancestors(turn)).toContain(hop);
    }
    // The hub's routing decisions are in the trace too.
    expect(spans.some((span) => span.service === 'hub' && span.name === 'agora.route')).toBe(true);
    // The LLM's call, with its tokens, under the summariser's turn.
    const chat = spans.find((span) => span.service === 'summariser' && span.name.startsWith('chat '))!;
    expect(chat.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'small',
      'gen_ai.provider.name': 'openai',
    });
    expect(chat.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    expect(chat.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(ancestors(chat).some((span) => span.name === 'agora.turn')).toBe(true);
  });

  it("puts each agent's room turn under the hub's span for it", async () => {
    const [researcher, , publisher] = started.slice(1);
    const created = await runCli(
      ['room', 'create', '--topic', 'traced room', '--participant', researcher!.url, '--participant', publisher!.url],
      { env: { AGORA_HUB: hub.url, ...traced('room-cli') } },
    );
    expect(created.code, created.stderr).toBe(0);
    const spans = await spansWhen(
      (all) => all.filter((span) => span.service === 'hub' && span.name === 'agora.room.turn').length >= 2,
    );
    const turns = spans.filter((span) => span.name === 'agora.room.turn');
    for (const turn of turns.slice(0, 2)) {
      const speaker = turn.attributes['agora.room.speaker'];
      // The hub's client span for the turn's query, and under it the participant's server span.
      const clients = spans.filter((span) => span.parentSpanId === turn.spanId && span.kind === 3);
      expect(clients.length, `turn of ${String(speaker)}`).toBeGreaterThan(0);
      const served = await spansWhen((all) =>
        all.some((span) => span.kind === 2 && clients.some((client) => client.spanId === span.parentSpanId)),
      );
      expect(
        served.some((span) => span.kind === 2 && clients.some((client) => client.spanId === span.parentSpanId)),
      ).toBe(true);
    }
  });
});
