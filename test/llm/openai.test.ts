// The Chat Completions mapping, through the real openai SDK against FakeOpenAI: what goes on the wire and what
// comes back. The behaviour shared with every provider is in provider-contract.ts.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { converse } from '../../src/llm/tool-loop.js';
import { OpenAIModel } from '../../src/llm/openai/model.js';
import { FakeOpenAI } from '../../src/testing/index.js';
import { defineTool } from '../../src/tool/define.js';

let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await FakeOpenAI.start();
});
beforeEach(() => fake.reset());
afterAll(() => fake.close());

const model = () => new OpenAIModel({ baseURL: fake.url, apiKey: 'test-key', maxRetries: 0, model: 'gpt-test' });
const tides = defineTool({
  name: 'get_tides',
  description: 'Tides of a port',
  input: z.object({ port: z.string() }),
  run: () => {
    throw new Error('tide service down');
  },
});

describe('OpenAIModel', () => {
  it('sends the system prompt as a system message, tools as functions, and maps the reply, its stop reason and usage', async () => {
    fake.push({
      text: 'Checking.',
      toolUse: [{ id: 'call_1', name: 'get_tides', input: { port: 'Brest' } }],
      usage: { inputTokens: 12, outputTokens: 3 },
    });
    const response = await model().complete({
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Tides?' }],
      temperature: 0,
      maxTokens: 64,
      tools: [
        {
          name: 'get_tides',
          description: 'Tides of a port',
          inputSchema: { properties: { port: { type: 'string' } } },
        },
      ],
    });
    expect(response).toEqual({
      text: 'Checking.',
      toolCalls: [{ id: 'call_1', name: 'get_tides', input: { port: 'Brest' } }],
      content: [
        { type: 'text', text: 'Checking.' },
        { type: 'tool-call', id: 'call_1', name: 'get_tides', input: { port: 'Brest' } },
      ],
      stopReason: 'tool-calls',
      usage: { inputTokens: 12, outputTokens: 3 },
      model: 'gpt-test',
    });
    expect(fake.requests[0]!.body).toEqual({
      model: 'gpt-test',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Tides?' },
      ],
      max_tokens: 64,
      temperature: 0,
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_tides',
            description: 'Tides of a port',
            parameters: { type: 'object', properties: { port: { type: 'string' } } },
          },
        },
      ],
    });
    expect(fake.requests[0]!.apiKey).toBe('test-key');
  });

  it("sends a tool's result (or its error) back as a tool message answering the assistant's call", async () => {
    fake.push({ toolUse: [{ id: 'call_t', name: 'get_tides', input: { port: 'Brest' } }] }, 'Tides unknown.');
    expect(
      (await converse(model(), { system: '', messages: [{ role: 'user', content: 'Tides?' }], tools: [tides] })).text,
    ).toBe('Tides unknown.');
    expect(fake.requests[1]!.body.messages).toEqual([
      { role: 'user', content: 'Tides?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_t', type: 'function', function: { name: 'get_tides', arguments: '{"port":"Brest"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_t', content: 'Error: tide service down' },
    ]);
    expect(fake.requests[1]!.lastUserText).toBe('Error: tide service down');
  });

  it('streams tool calls and asks for the usage chunk, so a streamed call is counted', async () => {
    fake.push({
      toolUse: [{ id: 'call_s', name: 'get_tides', input: { port: 'Brest', days: [1, 2] } }],
      usage: { inputTokens: 7, outputTokens: 4 },
    });
    const response = await new OpenAIModel({ baseURL: fake.url, apiKey: 'k', maxRetries: 0, stream: true }).complete({
      system: '',
      messages: [{ role: 'user', content: 'Tides?' }],
    });
    expect(fake.requests[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(response).toMatchObject({
      toolCalls: [{ id: 'call_s', name: 'get_tides', input: { port: 'Brest', days: [1, 2] } }],
      stopReason: 'tool-calls',
      usage: { inputTokens: 7, outputTokens: 4 },
    });
  });

  it('fails as LLM unavailable on a malformed reply or tool arguments that are not JSON, without retrying', async () => {
    fake.push({ status: 200, body: { choices: [] } });
    await expect(model().complete({ system: '', messages: [{ role: 'user', content: 'Hi' }] })).rejects.toMatchObject({
      code: 'LLM_UNAVAILABLE',
      cause: { message: expect.stringContaining('Malformed reply from the Chat Completions API') },
    });
    const broken = {
      id: 'c',
      object: 'chat.completion',
      created: 1,
      model: 'gpt-test',
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'x', type: 'function', function: { name: 'get_tides', arguments: '{"port": ' } }],
          },
        },
      ],
    };
    fake.push({ status: 200, body: broken });
    await expect(
      new OpenAIModel({ baseURL: fake.url, apiKey: 'k', maxRetries: 2 }).complete({
        system: '',
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    ).rejects.toMatchObject({
      cause: { message: expect.stringContaining('The arguments of the call of get_tides are not JSON') },
    });
    expect(fake.requests).toHaveLength(2);
  });
});
