import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MAX_SERIES, Metrics, OTHER_PROTOCOL } from '../../src/metrics.js';
import { hashText } from '../../src/protocol/document.js';
import { defineTool } from '../../src/tool/define.js';
import { startTestAgent, type TestAgent, type TestAgentOptions } from '../../src/testing/index.js';

const WEATHER =
  '---\nname: Weather forecast\ndescription: Ask for the weather in one city.\nmultiround: false\n---\nThe sender sends JSON {"city": string}.\nThe receiver replies JSON {"weather": string} or {"error": "Unsupported location"}.\n';
const NOTES =
  '---\nname: Notes\ndescription: Keep a note.\nmultiround: false\n---\nThe sender sends a note as text. The receiver replies "noted".\n';
const ECHO =
  '---\nname: Echo\ndescription: Echo a value.\nmultiround: false\n---\nThe sender sends JSON {"value": string}. The receiver replies the same JSON.\n';
const ECHO_ROUTINE = 'export default (body: unknown) => body;\n';
// A document no folder holds: the agent learns it from the `data:` source the query carries.
const TIDES =
  '---\nname: Tide table\ndescription: High tide time at a port.\nmultiround: false\n---\nThe sender sends JSON {"port": string}. The receiver replies JSON {"high": "HH:MM"}.\n';
const TIDES_HASH = hashText(TIDES);

const FORECAST_TOOL = `import { z } from 'zod';
import { defineTool } from 'agora-agents';

export default defineTool({
  name: 'get_forecast',
  description: 'Forecast for a city',
  input: z.object({ city: z.string() }),
  run: ({ city }) => ({ city, sky: city === 'Paris' ? 'sunny' : 'rain' }),
});
`;
const FORECAST_PROTOCOL =
  '---\nname: Forecast\ndescription: Sky over a city.\nmultiround: false\n---\nThe sender sends JSON {"city": string}. The receiver replies JSON {"city": string, "sky": string}.\n';
const FORECAST_ROUTINE = `import { defineRoutine } from 'agora-agents';

export default defineRoutine({
  handle: (body, context) => context.tools.get_forecast!(body),
});
`;

const NATURAL_LANGUAGE_REFUSAL = 'This agent only accepts queries under the protocols listed at /wellknown';

const throwingTides = defineTool({
  name: 'get_tides',
  description: 'Tide times for a port',
  input: z.object({ port: z.string() }),
  run: () => {
    throw new Error('tide service down');
  },
});

const forecastTool = defineTool({
  name: 'get_forecast',
  description: 'Forecast for a city',
  input: z.object({ city: z.string() }),
  run: ({ city }) => ({ city, sky: 'sunny' }),
});

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function agentFolder(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'agora-receiver-llm-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

async function start(options: TestAgentOptions): Promise<TestAgent> {
  const agent = await startTestAgent(options);
  let closed = false;
  const close = agent.close;
  agent.close = async () => {
    if (closed) return;
    closed = true;
    await close();
  };
  cleanups.push(() => agent.close());
  return agent;
}

async function wellknown(agent: TestAgent): Promise<Record<string, string[]>> {
  const response = await fetch(`${agent.url}/wellknown`);
  expect(response.status).toBe(200);
  return (await response.json()) as Record<string, string[]>;
}

describe('Receiver with an LLM, through the real SDK against FakeAnthropic', () => {
  it('answers natural language, presenting the agent, its protocols and its tools to the LLM', async () => {
    const dir = await agentFolder({
      'package.json': JSON.stringify({ name: 'weather-agent', description: 'Forecasts for European cities.' }),
      'protocols/weather.md': WEATHER,
    });
    const agent = await start({ dir, tools: [forecastTool], fake: { replies: ['  Sunny in Paris.\n'] } });

    expect(await agent.query('What is the weather in Paris?')).toEqual({ status: 'success', body: 'Sunny in Paris.' });

    expect(agent.fake.requests).toHaveLength(1);
    const [request] = agent.fake.requests;
    expect(request!.apiKey).toBe('test');
    expect(request!.system).toContain('You are weather-agent');
    expect(request!.system).toContain('Forecasts for European cities.');
    expect(request!.system).toContain('- Weather forecast: Ask for the weather in one city.');
    expect(request!.system).toContain('- get_forecast: Forecast for a city');
    expect(request!.body.messages).toEqual([{ role: 'user', content: 'What is the weather in Paris?' }]);
    expect(request!.body.tools).toEqual([
      {
        name: 'get_forecast',
        description: 'Forecast for a city',
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ]);
  });

  it('carries the history of a multiround conversation, also into another receiver sharing the store and memory', async () => {
    const dir = await agentFolder({});
    const first = await start({
      dir,
      name: 'weather-agent',
      fake: { replies: ['Which city?', 'Paris: sunny.', 'Tomorrow: rain.'] },
    });

    const opening = await first.query('What is the weather?', { multiround: true });
    expect(opening).toMatchObject({
      status: 'success',
      body: 'Which city?',
      conversationId: expect.any(String),
      conversationExpires: expect.any(Number),
    });
    const id = (opening as { conversationId: string }).conversationId;
    expect(await first.followUp(id, 'Paris')).toMatchObject({
      status: 'success',
      body: 'Paris: sunny.',
      conversationId: id,
    });
    expect(first.fake.requests[1]!.body.messages).toEqual([
      { role: 'user', content: 'What is the weather?' },
      { role: 'assistant', content: 'Which city?' },
      { role: 'user', content: 'Paris' },
    ]);

    // Any process with the same store takes the next turn: the history lives in the store, not the receiver.
    const second = await start({
      dir,
      name: 'weather-agent',
      fake: first.fake,
      store: first.receiver.store,
      memory: first.receiver.memory,
    });
    expect(await second.followUp(id, 'And tomorrow?')).toMatchObject({
      status: 'success',
      body: 'Tomorrow: rain.',
      conversationId: id,
    });
    expect(first.fake.requests[2]!.body.messages).toEqual([
      { role: 'user', content: 'What is the weather?' },
      { role: 'assistant', content: 'Which city?' },
      { role: 'user', content: 'Paris' },
      { role: 'assistant', content: 'Paris: sunny.' },
      { role: 'user', content: 'And tomorrow?' },
    ]);
  });

  it('opens the transcript with the peer when the kept history starts with a reply', async () => {
    const dir = await agentFolder({});
    const agent = await start({ dir, maxHistory: 3, fake: { replies: ['One.', 'Two.', 'Three.'] } });

    const opening = await agent.query('Count', { multiround: true });
    const id = (opening as { conversationId: string }).conversationId;
    await agent.followUp(id, 'Again');
    expect(await agent.followUp(id, 'Once more')).toMatchObject({ status: 'success', body: 'Three.' });
    // Three messages kept ([One., Again, Two.]): the leading reply is left out, the API wants the user first.
    expect(agent.fake.requests[2]!.body.messages).toEqual([
      { role: 'user', content: 'Again' },
      { role: 'assistant', content: 'Two.' },
      { role: 'user', content: 'Once more' },
    ]);
  });

  it('parses a JSON reply the LLM put in a code fence, instructed by the protocol document', async () => {
    const dir = await agentFolder({ 'protocols/weather.md': WEATHER });
    const agent = await start({ dir, fake: { replies: ['Here you go:\n```json\n{"weather": "sunny"}\n```\n'] } });

    expect(await agent.query({ city: 'Paris' }, { protocol: 'protocols/weather.md' })).toEqual({
      status: 'success',
      body: { weather: 'sunny' },
    });
    const [request] = agent.fake.requests;
    expect(request!.system).toContain(`<protocol>\n${WEATHER.trim()}\n</protocol>`);
    expect(request!.system).toContain('only the JSON value');
    expect(request!.body.messages).toEqual([{ role: 'user', content: '{"city":"Paris"}' }]);
  });

  it('repairs a reply that is not JSON with a second call', async () => {
    const dir = await agentFolder({ 'protocols/weather.md': WEATHER });
    const agent = await start({ dir, fake: { replies: ['It is sunny in Paris!', '{"weather": "sunny"}'] } });

    expect(await agent.query({ city: 'Paris' }, { protocol: 'protocols/weather.md' })).toEqual({
      status: 'success',
      body: { weather: 'sunny' },
    });
    expect(agent.fake.requests).toHaveLength(2);
    const repair = agent.fake.requests[1]!;
    expect(repair.body.messages.slice(0, 2)).toEqual([
      { role: 'user', content: '{"city":"Paris"}' },
      { role: 'assistant', content: [{ type: 'text', text: 'It is sunny in Paris!' }] },
    ]);
    expect(repair.lastUserText).toMatch(/^Your reply is not valid JSON/);
  });

  it('keeps the tools declared in the repair call when the first answer used them', async () => {
    const dir = await agentFolder({ 'protocols/weather.md': WEATHER });
    const agent = await start({
      dir,
      tools: [forecastTool],
      fake: {
        replies: [
          { toolUse: [{ id: 'toolu_sky', name: 'get_forecast', input: { city: 'Paris' } }] },
          'Sunny, as the forecast says.',
          '{"weather": "sunny"}',
        ],
      },
    });

    expect(await agent.query({ city: 'Paris' }, { protocol: 'protocols/weather.md' })).toEqual({
      status: 'success',
      body: { weather: 'sunny' },
    });
    const repair = agent.fake.requests[2]!;
    // The API refuses a transcript with tool_use blocks when no tools are defined.
    expect(
      repair.body.messages.some(
        (message: { content: unknown }) =>
          Array.isArray(message.content) &&
          message.content.some((block: { type: string }) => block.type === 'tool_use'),
      ),
    ).toBe(true);
    expect(repair.body.tools.map((tool: { name: string }) => tool.name)).toEqual(['get_forecast']);
  });

  it('fails with LLM unavailable when the reply is still not JSON after the repair', async () => {
    const dir = await agentFolder({ 'protocols/weather.md': WEATHER });
    const agent = await start({ dir, fake: { replies: ['Sunny!', 'Sunny, I said.'] } });

    expect(await agent.query({ city: 'Paris' }, { protocol: 'protocols/weather.md' })).toEqual({
      status: 'failure',
      error: 'LLM unavailable',
    });
    expect(agent.fake.requests).toHaveLength(2);
  });

  it('refuses a learned protocol judged unsuitable, unlisted, and remembers the verdict across a restart', async () => {
    const dir = await agentFolder({});
    const agent = await start({ dir, fake: { replies: ['I have no source of tide data.\nNO'] } });

    expect(await agent.query({ port: 'Brest' }, { protocol: TIDES })).toEqual({
      status: 'failure',
      error: 'Unsupported protocol',
    });
    expect(agent.fake.requests).toHaveLength(1);
    const [judging] = agent.fake.requests;
    expect(judging!.body.temperature).toBe(0);
    expect(judging!.lastUserText).toBe(`<protocol>\n${TIDES.trim()}\n</protocol>`);
    expect(judging!.system).toMatch(/YES or NO/);
    expect(await wellknown(agent)).not.toHaveProperty(TIDES_HASH);
    // Judged once: the next query is refused without asking again.
    expect(await agent.query({ port: 'Brest' }, { protocol: TIDES })).toEqual({
      status: 'failure',
      error: 'Unsupported protocol',
    });
    expect(agent.fake.requests).toHaveLength(1);
    await agent.close();

    const restarted = await start({ dir });
    expect(await restarted.query({ port: 'Brest' }, { protocol: TIDES })).toEqual({
      status: 'failure',
      error: 'Unsupported protocol',
    });
    expect(await wellknown(restarted)).not.toHaveProperty(TIDES_HASH);
    expect(restarted.fake.requests).toHaveLength(0);
  });

  it('serves and lists a learned protocol judged suitable, and remembers the verdict across a restart', async () => {
    const dir = await agentFolder({});
    const agent = await start({
      dir,
      tools: [throwingTides],
      fake: { replies: ['The get_tides tool covers it.\nYES', '{"high": "06:12"}'] },
    });

    expect(await wellknown(agent)).not.toHaveProperty(TIDES_HASH);
    expect(await agent.query({ port: 'Brest' }, { protocol: TIDES })).toEqual({
      status: 'success',
      body: { high: '06:12' },
    });
    expect(agent.fake.requests).toHaveLength(2);
    expect(agent.fake.requests[0]!.system).toContain('- get_tides: Tide times for a port');
    expect(agent.fake.requests[1]!.system).toContain('<protocol>');
    expect((await wellknown(agent))[TIDES_HASH]).toEqual([`${agent.url}/protocols/${TIDES_HASH}`]);
    await agent.close();

    const restarted = await start({ dir, tools: [throwingTides], fake: { replies: ['{"high": "07:40"}'] } });
    expect((await wellknown(restarted))[TIDES_HASH]).toEqual([`${restarted.url}/protocols/${TIDES_HASH}`]);
    // Known by hash now: no source needed, and no second judgement.
    const response = await fetch(`${restarted.url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ protocolHash: TIDES_HASH, body: { port: 'Brest' } }),
    });
    expect(await response.json()).toEqual({ status: 'success', body: { high: '07:40' } });
    expect(restarted.fake.requests).toHaveLength(1);
    expect(restarted.fake.requests[0]!.system).not.toMatch(/YES or NO/);
  });

  it('never judges a protocol from its own folder', async () => {
    const dir = await agentFolder({ 'protocols/notes.md': NOTES });
    const agent = await start({ dir, fake: { replies: ['noted'] } });

    expect(await wellknown(agent)).toHaveProperty(hashText(NOTES));
    expect(await agent.query('Buy milk', { protocol: 'protocols/notes.md' })).toEqual({
      status: 'success',
      body: 'noted',
    });
    expect(agent.fake.requests).toHaveLength(1);
    expect(agent.fake.requests[0]!.system).not.toMatch(/YES or NO/);
    expect(agent.fake.requests[0]!.system).toContain('<protocol>');
  });

  it('returns a tool error to the model and still answers', async () => {
    const dir = await agentFolder({});
    const agent = await start({
      dir,
      tools: [throwingTides],
      fake: {
        replies: [
          { toolUse: [{ id: 'toolu_tides', name: 'get_tides', input: { port: 'Brest' } }] },
          'No tide data is available right now.',
        ],
      },
    });

    expect(await agent.query('When is high tide in Brest?')).toEqual({
      status: 'success',
      body: 'No tide data is available right now.',
    });
    expect(agent.fake.requests).toHaveLength(2);
    const messages = agent.fake.requests[1]!.body.messages;
    expect(messages[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'tool_use', id: 'toolu_tides', name: 'get_tides', input: { port: 'Brest' } }],
    });
    expect(messages[2]).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_tides', content: 'Error: tide service down', is_error: true },
      ],
    });
  });

  it('never sends the API an empty message, from the peer or from an earlier empty reply', async () => {
    const dir = await agentFolder({});
    const agent = await start({ dir, fake: { replies: ['', 'Still here.'] } });

    const opening = await agent.query('', { multiround: true });
    expect(opening).toMatchObject({ status: 'success', body: '' });
    await agent.followUp((opening as { conversationId: string }).conversationId, 'Hello?');
    expect(agent.fake.requests[0]!.body.messages).toEqual([{ role: 'user', content: '(empty message)' }]);
    expect(agent.fake.requests[1]!.body.messages).toEqual([
      { role: 'user', content: '(empty message)' },
      { role: 'assistant', content: '(empty message)' },
      { role: 'user', content: 'Hello?' },
    ]);
  });

  it('unwraps the { value } an LLM sends to a tool whose input is not an object', async () => {
    const shout = defineTool({
      name: 'shout',
      description: 'Upper-cases a text',
      input: z.string(),
      run: (text) => text.toUpperCase(),
    });
    const dir = await agentFolder({});
    const agent = await start({
      dir,
      tools: [shout],
      fake: { replies: [{ toolUse: [{ id: 'toolu_shout', name: 'shout', input: { value: 'hi' } }] }, 'HI'] },
    });

    expect(await agent.query('Shout hi')).toEqual({ status: 'success', body: 'HI' });
    expect(agent.fake.requests[0]!.body.tools[0].input_schema).toEqual({
      type: 'object',
      properties: { value: { type: 'string' } },
      required: ['value'],
    });
    expect(agent.fake.requests[1]!.body.messages[2].content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_shout', content: 'HI' },
    ]);
  });

  it('fails with LLM unavailable when the model keeps calling tools past maxToolSteps', async () => {
    const dir = await agentFolder({});
    const agent = await start({
      dir,
      tools: [forecastTool],
      maxToolSteps: 2,
      fake: { fallback: { toolUse: [{ name: 'get_forecast', input: { city: 'Paris' } }] } },
    });

    expect(await agent.query('Weather in Paris?')).toEqual({ status: 'failure', error: 'LLM unavailable' });
    expect(agent.fake.requests).toHaveLength(2);
  });

  it('retries after a 429 and answers', async () => {
    const dir = await agentFolder({});
    const agent = await start({
      dir,
      anthropic: { maxRetries: 1, retryBaseMs: 1 },
      fake: { replies: [{ status: 429, headers: { 'retry-after-ms': '5' } }, 'Hello!'] },
    });

    expect(await agent.query('Hi')).toEqual({ status: 'success', body: 'Hello!' });
    expect(agent.fake.requests).toHaveLength(2);
  });

  it('fails with LLM unavailable when the API keeps answering 500', async () => {
    const dir = await agentFolder({});
    const agent = await start({
      dir,
      anthropic: { maxRetries: 2, retryBaseMs: 1 },
      fake: { fallback: { status: 500 } },
    });

    expect(await agent.query('Hi')).toEqual({ status: 'failure', error: 'LLM unavailable' });
    expect(agent.fake.requests).toHaveLength(3);
  });

  it('fails with LLM unavailable when the LLM stalls past its timeout', async () => {
    const dir = await agentFolder({});
    const agent = await start({ dir, anthropic: { timeoutMs: 300 }, fake: { replies: [{ stall: true }] } });

    // The fake never answers: only the client's timeout can produce this answer.
    expect(await agent.query('Hi')).toEqual({ status: 'failure', error: 'LLM unavailable' });
    expect(agent.fake.requests).toHaveLength(1);
  });

  it('without an LLM, refuses natural language and unlists a protocol that has no routine', async () => {
    const dir = await agentFolder({
      'protocols/notes.md': NOTES,
      'protocols/echo.md': ECHO,
      'routines/echo.ts': ECHO_ROUTINE,
    });
    const agent = await start({ dir, llm: null });

    expect(await agent.query('Hello?')).toEqual({ status: 'failure', error: NATURAL_LANGUAGE_REFUSAL });
    expect(await agent.query('Buy milk', { protocol: 'protocols/notes.md' })).toEqual({
      status: 'failure',
      error: 'Unsupported protocol',
    });
    expect(await agent.query({ value: 'x' }, { protocol: 'protocols/echo.md' })).toEqual({
      status: 'success',
      body: { value: 'x' },
    });
    expect(Object.keys(await wellknown(agent))).toEqual([hashText(ECHO)]);
    // A peer's document cannot be judged, let alone answered, without an LLM.
    expect(await agent.query({ port: 'Brest' }, { protocol: TIDES })).toEqual({
      status: 'failure',
      error: 'Unsupported protocol',
    });
    expect(agent.fake.requests).toHaveLength(0);
  });

  it('counts queries by path and LLM tokens by protocol and purpose at /metrics', async () => {
    const dir = await agentFolder({
      'protocols/weather.md': WEATHER,
      'protocols/echo.md': ECHO,
      'routines/echo.ts': ECHO_ROUTINE,
    });
    const agent = await start({
      dir,
      fake: {
        replies: [
          { text: 'Hello!', usage: { input_tokens: 120, output_tokens: 7 } },
          { text: '{"weather": "sunny"}', usage: { input_tokens: 200, output_tokens: 11 } },
          { text: 'Suitable.\nYES', usage: { input_tokens: 50, output_tokens: 3 } },
          { text: '{"high": "06:12"}', usage: { input_tokens: 60, output_tokens: 8 } },
          { status: 400 },
        ],
      },
    });

    expect(await agent.query({ value: 'a' }, { protocol: 'protocols/echo.md' })).toMatchObject({ status: 'success' });
    expect(await agent.query({ value: 'b' }, { protocol: 'protocols/echo.md' })).toMatchObject({ status: 'success' });
    expect(await agent.query('Hi')).toMatchObject({ status: 'success' });
    expect(await agent.query({ city: 'Paris' }, { protocol: 'protocols/weather.md' })).toMatchObject({
      status: 'success',
    });
    expect(await agent.query({ port: 'Brest' }, { protocol: TIDES })).toMatchObject({ status: 'success' });
    expect(await agent.query('Hi again')).toEqual({ status: 'failure', error: 'LLM unavailable' });

    const response = await fetch(`${agent.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const lines = (await response.text()).split('\n');
    const series = (prefix: string) => lines.filter((line) => line.startsWith(prefix)).sort();

    expect(series('agora_queries_total{')).toEqual(
      [
        'agora_queries_total{path="routine",protocol="Echo"} 2',
        'agora_queries_total{path="llm",protocol="natural_language"} 1',
        'agora_queries_total{path="llm",protocol="Weather forecast"} 1',
        'agora_queries_total{path="llm",protocol="Tide table"} 1',
        'agora_queries_total{path="failure",protocol="natural_language"} 1',
      ].sort(),
    );
    expect(series('agora_llm_calls_total{')).toEqual(
      [
        'agora_llm_calls_total{protocol="natural_language",purpose="answer"} 1',
        'agora_llm_calls_total{protocol="Weather forecast",purpose="answer"} 1',
        'agora_llm_calls_total{protocol="Tide table",purpose="suitability"} 1',
        'agora_llm_calls_total{protocol="Tide table",purpose="answer"} 1',
      ].sort(),
    );
    expect(series('agora_llm_tokens_total{')).toEqual(
      [
        'agora_llm_tokens_total{direction="input",protocol="natural_language",purpose="answer"} 120',
        'agora_llm_tokens_total{direction="output",protocol="natural_language",purpose="answer"} 7',
        'agora_llm_tokens_total{direction="input",protocol="Weather forecast",purpose="answer"} 200',
        'agora_llm_tokens_total{direction="output",protocol="Weather forecast",purpose="answer"} 11',
        'agora_llm_tokens_total{direction="input",protocol="Tide table",purpose="suitability"} 50',
        'agora_llm_tokens_total{direction="output",protocol="Tide table",purpose="suitability"} 3',
        'agora_llm_tokens_total{direction="input",protocol="Tide table",purpose="answer"} 60',
        'agora_llm_tokens_total{direction="output",protocol="Tide table",purpose="answer"} 8',
      ].sort(),
    );
    expect(agent.fake.totals()).toEqual({ calls: 4, inputTokens: 430, outputTokens: 29 });
    expect(series('agora_routine_duration_seconds_count{')).toEqual([
      'agora_routine_duration_seconds_count{protocol="Echo"} 2',
    ]);
    expect(series('agora_routine_duration_seconds_bucket{protocol="Echo",le="+Inf"}')).toEqual([
      'agora_routine_duration_seconds_bucket{protocol="Echo",le="+Inf"} 2',
    ]);
    expect(agent.receiver.counters.snapshot()).toEqual({
      queries: { routine: 2, llm: 3, failure: 1 },
      llmCalls: 4,
      inputTokens: 430,
      outputTokens: 29,
      streams: 0,
      deltas: 0,
      abortedCalls: 0,
    });
  });

  it('counts made-up protocol hashes under one series, so a peer cannot grow /metrics', async () => {
    const dir = await agentFolder({});
    const agent = await start({ dir, llm: null });

    for (let index = 0; index < 200; index++) {
      await expect(agent.receiver.query({ protocolHash: hashText(`made up ${index}`), body: null })).rejects.toThrow(
        'Unsupported protocol',
      );
    }
    const lines = (await agent.receiver.metrics())
      .split('\n')
      .filter((line) => line.startsWith('agora_queries_total{'));
    expect(lines).toEqual(['agora_queries_total{path="failure",protocol="unknown"} 200']);
    expect(agent.receiver.counters.snapshot().queries.failure).toBe(200);
  });

  it('bounds the metric series at MAX_SERIES, counting the rest as another protocol', async () => {
    const metrics = new Metrics();
    for (let index = 0; index < MAX_SERIES + 50; index++) metrics.query('failure', `protocol ${index}`);
    const lines = metrics
      .render()
      .split('\n')
      .filter((line) => line.startsWith('agora_queries_total{'));
    expect(lines).toHaveLength(MAX_SERIES + 1);
    expect(lines).toContain(`agora_queries_total{path="failure",protocol="${OTHER_PROTOCOL}"} 50`);
  });

  it('offers tools from the tools/ folder to the LLM and to routines through context.tools', async () => {
    const dir = await agentFolder({
      'tools/forecast.ts': FORECAST_TOOL,
      'protocols/forecast.md': FORECAST_PROTOCOL,
      'routines/forecast.ts': FORECAST_ROUTINE,
    });
    const agent = await start({
      dir,
      fake: {
        replies: [
          { toolUse: [{ id: 'toolu_sky', name: 'get_forecast', input: { city: 'Paris' } }] },
          'Sunny in Paris.',
        ],
      },
    });

    expect(agent.receiver.tools.map((tool) => tool.name)).toEqual(['get_forecast']);
    expect(await agent.query('Weather in Paris?')).toEqual({ status: 'success', body: 'Sunny in Paris.' });
    expect(agent.fake.requests[0]!.body.tools).toEqual([
      {
        name: 'get_forecast',
        description: 'Forecast for a city',
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ]);
    expect(agent.fake.requests[1]!.body.messages[2]).toEqual({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'toolu_sky', content: '{"city":"Paris","sky":"sunny"}' }],
    });

    expect(await agent.query({ city: 'Oslo' }, { protocol: 'protocols/forecast.md' })).toEqual({
      status: 'success',
      body: { city: 'Oslo', sky: 'rain' },
    });
    expect(agent.fake.requests).toHaveLength(2);
  });
});
