import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { APIError } from '@anthropic-ai/sdk';
import { AgoraError } from '../../src/errors.js';
import { AnthropicModel, DEFAULT_MODEL, type AnthropicModelOptions } from '../../src/llm/anthropic/model.js';
import { hasAnthropicKey } from '../../src/llm/choose.js';
import { converse } from '../../src/llm/tool-loop.js';
import { type LlmRequest } from '../../src/llm/model.js';
import { defineTool } from '../../src/tool/define.js';
import { FakeAnthropic } from '../../src/testing/fake-anthropic.js';

let fake: FakeAnthropic;

beforeEach(async () => {
  fake = await FakeAnthropic.start();
});

afterEach(async () => {
  await fake.close();
  vi.unstubAllEnvs();
});

function modelFor(options: AnthropicModelOptions = {}): AnthropicModel {
  return new AnthropicModel({
    baseURL: fake.url,
    apiKey: 'test-key',
    model: 'claude-test',
    retryBaseMs: 10,
    ...options,
  });
}

const hello: LlmRequest = { system: 'You are terse.', messages: [{ role: 'user', content: 'Say hello' }] };

async function failure(promise: Promise<unknown>, message = 'LLM unavailable'): Promise<AgoraError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(AgoraError);
  expect((error as AgoraError).code).toBe('LLM_UNAVAILABLE');
  expect((error as AgoraError).message).toBe(message);
  return error as AgoraError;
}

const forecast = defineTool({
  name: 'get_forecast',
  description: 'Forecast for a city',
  input: z.object({ city: z.string() }),
  run: ({ city }) => ({ city, sky: 'sunny' }),
});

const broken = defineTool({
  name: 'get_tides',
  description: 'Tides for a port',
  input: z.object({ port: z.string() }),
  run: () => {
    throw new Error('tide service down');
  },
});

describe('AnthropicModel', () => {
  it('returns a text reply with its usage and maps the request', async () => {
    fake.push({ text: 'Hello!', usage: { input_tokens: 12, output_tokens: 3 } });
    const response = await modelFor().complete({ ...hello, temperature: 0, maxTokens: 256 });
    expect(response).toEqual({
      text: 'Hello!',
      toolCalls: [],
      content: [{ type: 'text', text: 'Hello!' }],
      stopReason: 'stop',
      usage: { inputTokens: 12, outputTokens: 3 },
      model: 'claude-test',
    });
    const [request] = fake.requests;
    expect(request?.body).toMatchObject({
      model: 'claude-test',
      system: 'You are terse.',
      max_tokens: 256,
      temperature: 0,
      messages: [{ role: 'user', content: 'Say hello' }],
    });
    expect(request?.apiKey).toBe('test-key');
    expect(request?.system).toBe('You are terse.');
    expect(request?.lastUserText).toBe('Say hello');
  });

  it('maps a tool_use reply to tool calls and sends tools with their input schema', async () => {
    fake.push({ text: 'Checking.', toolUse: [{ name: 'get_forecast', input: { city: 'Paris' }, id: 'toolu_1' }] });
    const response = await modelFor().complete({
      ...hello,
      tools: [
        {
          name: 'get_forecast',
          description: 'Forecast for a city',
          inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      ],
    });
    expect(response.text).toBe('Checking.');
    expect(response.stopReason).toBe('tool-calls');
    expect(response.toolCalls).toEqual([{ id: 'toolu_1', name: 'get_forecast', input: { city: 'Paris' } }]);
    expect(response.content).toEqual([
      { type: 'text', text: 'Checking.' },
      { type: 'tool-call', id: 'toolu_1', name: 'get_forecast', input: { city: 'Paris' } },
    ]);
    expect(fake.requests[0]?.body.tools).toEqual([
      {
        name: 'get_forecast',
        description: 'Forecast for a city',
        input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    ]);
    expect(fake.requests[0]?.body.max_tokens).toBe(4096);
  });

  it("runs the converse() tool loop and returns a throwing tool's error to the model", async () => {
    fake.push(
      {
        toolUse: [
          { name: 'get_forecast', input: { city: 'Paris' }, id: 'toolu_a' },
          { name: 'get_tides', input: { port: 'Brest' }, id: 'toolu_b' },
        ],
      },
      'Sunny in Paris; tides unknown.',
    );
    const result = await converse(modelFor(), {
      system: 'Weather agent',
      messages: [{ role: 'user', content: 'Weather and tides?' }],
      tools: [forecast, broken],
    });
    expect(result.text).toBe('Sunny in Paris; tides unknown.');
    expect(result.calls).toBe(2);
    expect(result.usage).toEqual({ inputTokens: 20, outputTokens: 10 });

    const second = fake.requests[1]?.body;
    expect(second.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'tool_use', id: 'toolu_a', name: 'get_forecast', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'toolu_b', name: 'get_tides', input: { port: 'Brest' } },
      ],
    });
    expect(second.messages[2].content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_a', content: JSON.stringify({ city: 'Paris', sky: 'sunny' }) },
      { type: 'tool_result', tool_use_id: 'toolu_b', content: 'Error: tide service down', is_error: true },
    ]);
    expect(fake.requests[1]?.lastUserText).toContain('tide service down');
  });

  it('stops the tool loop at maxSteps with LLM_UNAVAILABLE', async () => {
    fake.setFallback({ toolUse: [{ name: 'get_forecast', input: { city: 'Paris' } }] });
    await failure(
      converse(modelFor(), {
        system: 'Weather agent',
        messages: [{ role: 'user', content: 'Loop' }],
        tools: [forecast],
        maxSteps: 3,
      }),
      'LLM tool loop exceeded 3 steps',
    );
    expect(fake.requests).toHaveLength(3);
  });

  it('retries a 429 and honours retry-after', async () => {
    fake.push({ status: 429, headers: { 'retry-after': '0' } }, 'ok');
    // A 10 s backoff would time the test out: only retry-after: 0 makes it pass quickly.
    const response = await modelFor({ retryBaseMs: 10_000 }).complete(hello);
    expect(response.text).toBe('ok');
    expect(fake.requests).toHaveLength(2);
  });

  it('fails with LLM_UNAVAILABLE after maxRetries + 1 attempts on 500', async () => {
    fake.setFallback({ status: 500 });
    const error = await failure(modelFor({ maxRetries: 2 }).complete(hello));
    expect(fake.requests).toHaveLength(3);
    expect(error.cause).toBeInstanceOf(APIError);
    expect((error.cause as APIError).status).toBe(500);
  });

  it('retries a 529 overloaded error', async () => {
    fake.push({ status: 529 }, 'recovered');
    expect((await modelFor().complete(hello)).text).toBe('recovered');
    expect(fake.requests).toHaveLength(2);
  });

  it('does not retry a 401', async () => {
    fake.setFallback({ status: 401 });
    const error = await failure(modelFor().complete(hello));
    expect(fake.requests).toHaveLength(1);
    expect((error.cause as APIError).status).toBe(401);
    expect(String(error.cause)).not.toContain('test-key');
  });

  it('does not retry a 400', async () => {
    fake.setFallback({ status: 400 });
    await failure(modelFor().complete(hello));
    expect(fake.requests).toHaveLength(1);
  });

  it('gives up on a stalled reply at timeoutMs', async () => {
    fake.push({ stall: true });
    const error = await failure(modelFor({ timeoutMs: 300 }).complete(hello));
    // Our own bound fired, not the test runner's: the cause names it.
    expect(error.cause).toMatchObject({ message: 'No complete reply within 300 ms' });
    expect(fake.requests).toHaveLength(1);
  });

  it('gives up on a stalled streaming reply at timeoutMs', async () => {
    fake.push({ stall: true });
    const error = await failure(modelFor({ timeoutMs: 300, stream: true }).complete(hello));
    expect(error.cause).toMatchObject({ message: 'No complete reply within 300 ms' });
  });

  it('stops when the caller aborts', async () => {
    fake.push({ stall: true });
    const controller = new AbortController();
    const pending = modelFor().complete({ ...hello, signal: controller.signal });
    controller.abort();
    await failure(pending);
    expect(fake.requests.length).toBeLessThanOrEqual(1);
  });

  it('rejects a malformed reply without retrying', async () => {
    fake.push({ status: 200, body: { type: 'message', content: 'not blocks' } });
    await failure(modelFor().complete(hello));
    expect(fake.requests).toHaveLength(1);
  });

  it('fails with LLM_UNAVAILABLE when the connection is refused', async () => {
    const url = fake.url;
    await fake.close();
    const model = new AnthropicModel({ baseURL: url, apiKey: 'test-key', retryBaseMs: 1 });
    await failure(model.complete(hello));
    fake = await FakeAnthropic.start();
  });

  it('streams a text reply and assembles it', async () => {
    fake.push({ text: 'Streamed hello', usage: { input_tokens: 7, output_tokens: 4 } });
    const response = await modelFor({ stream: true }).complete(hello);
    expect(fake.requests[0]?.body.stream).toBe(true);
    expect(response.text).toBe('Streamed hello');
    expect(response.stopReason).toBe('stop');
    expect(response.usage).toEqual({ inputTokens: 7, outputTokens: 4 });
    expect(response.model).toBe('claude-test');
  });

  it('streams a tool_use reply and assembles its input', async () => {
    fake.push({ toolUse: [{ name: 'get_forecast', input: { city: 'Paris', days: [1, 2] }, id: 'toolu_s' }] });
    const response = await modelFor({ stream: true }).complete(hello);
    expect(response.toolCalls).toEqual([
      { id: 'toolu_s', name: 'get_forecast', input: { city: 'Paris', days: [1, 2] } },
    ]);
    expect(response.stopReason).toBe('tool-calls');
  });

  it('retries a 429 in streaming mode', async () => {
    fake.push({ status: 429, headers: { 'retry-after': '0' } }, 'after the wait');
    expect((await modelFor({ stream: true }).complete(hello)).text).toBe('after the wait');
    expect(fake.requests).toHaveLength(2);
  });

  it('answers with a reply computed from the request', async () => {
    fake.push((request) => `echo: ${request.lastUserText} (${request.system})`);
    expect((await modelFor().complete(hello)).text).toBe('echo: Say hello (You are terse.)');
  });

  it('reports the usage it returned in totals()', async () => {
    fake.push('one', { text: 'two', usage: { input_tokens: 100, output_tokens: 50 } }, { status: 401 });
    const model = modelFor();
    await model.complete(hello);
    await model.complete(hello);
    await failure(model.complete(hello));
    expect(fake.totals()).toEqual({ calls: 2, inputTokens: 110, outputTokens: 55 });
    fake.reset();
    expect(fake.totals()).toEqual({ calls: 0, inputTokens: 0, outputTokens: 0 });
    expect(fake.requests).toHaveLength(0);
  });

  it('counts tokens by characters with tokenModel chars', async () => {
    const counting = await FakeAnthropic.start({ tokenModel: 'chars', replies: ['hello'] });
    try {
      const model = new AnthropicModel({ baseURL: counting.url, apiKey: 'test-key' });
      const response = await model.complete({ system: 'abcd', messages: [{ role: 'user', content: 'abcdefgh' }] });
      expect(response.usage).toEqual({ inputTokens: 3, outputTokens: 2 });
    } finally {
      await counting.close();
    }
  });

  it('answers 500 once the script runs out', async () => {
    fake.push('only one');
    const model = modelFor({ maxRetries: 0 });
    await model.complete(hello);
    const error = await failure(model.complete(hello));
    expect((error.cause as APIError).message).toContain('script ran out');
  });

  it('serves only POST /v1/messages', async () => {
    const response = await fetch(`${fake.url}/v1/models`);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });

  it('records a request without an API key rather than refusing it', async () => {
    fake.push('no key needed');
    const response = await fetch(`${fake.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-test', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text: 'no key needed' }],
      stop_sequence: null,
    });
    expect(fake.requests[0]?.apiKey).toBeUndefined();
  });

  it('rejects a request the real API would reject, as a 400', async () => {
    const response = await fetch(`${fake.url}/v1/messages`, {
      method: 'POST',
      body: JSON.stringify({ model: 'claude-test', messages: [] }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('takes the model given, else the default, and never the environment (chooseModel reads it)', () => {
    vi.stubEnv('AGORA_MODEL', 'claude-from-env');
    expect(new AnthropicModel({ apiKey: 'test-key' }).model).toBe(DEFAULT_MODEL);
    expect(new AnthropicModel({ apiKey: 'test-key', model: 'claude-x' }).model).toBe('claude-x');
  });

  it('sends the user first and no empty content, as the Messages API requires', async () => {
    fake.push('ok');
    await modelFor().complete({
      system: '',
      messages: [
        { role: 'assistant', content: 'an earlier reply, its question trimmed away' },
        { role: 'user', content: '' },
        { role: 'assistant', content: [{ type: 'text', text: '' }] },
        { role: 'user', content: '  ' },
      ],
    });
    expect(fake.requests[0]?.body.messages).toEqual([
      { role: 'user', content: '(empty message)' },
      { role: 'assistant', content: '(empty message)' },
      { role: 'user', content: '(empty message)' },
    ]);
  });
});

describe('hasAnthropicKey', () => {
  it('is false when no API key is configured at all', () => {
    expect(hasAnthropicKey({})).toBe(false);
    expect(hasAnthropicKey({ ANTHROPIC_API_KEY: '  ' })).toBe(false);
  });

  it('is true when ANTHROPIC_API_KEY is set', () => {
    expect(hasAnthropicKey({ ANTHROPIC_API_KEY: 'sk-ant-test' })).toBe(true);
  });
});
