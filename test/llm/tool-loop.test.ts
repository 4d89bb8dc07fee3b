import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgoraError } from '../../src/errors.js';
import { converse } from '../../src/llm/tool-loop.js';
import { scriptedModel } from '../../src/testing/index.js';
import { defineTool } from '../../src/tool/define.js';

const add = defineTool({
  name: 'add',
  description: 'Adds two numbers',
  input: z.object({ a: z.number(), b: z.number() }),
  run: ({ a, b }) => a + b,
});
const broken = defineTool({
  name: 'broken',
  description: 'Always fails',
  input: z.object({}),
  run: () => {
    throw new Error('out of order');
  },
});

describe('converse', () => {
  it('returns the text of a reply without tool calls after one call', async () => {
    const model = scriptedModel(['Hello!']);
    const result = await converse(model, { system: 'Be brief.', messages: [{ role: 'user', content: 'Hi' }] });
    expect(result).toMatchObject({ text: 'Hello!', calls: 1, usage: { inputTokens: 10, outputTokens: 5 } });
    expect(model.requests[0]).toMatchObject({ system: 'Be brief.', messages: [{ role: 'user', content: 'Hi' }] });
    expect(model.requests[0]?.tools).toBeUndefined();
  });

  it('runs the tools the model calls, sends back their results and errors, and adds up usage', async () => {
    const model = scriptedModel([
      {
        toolUse: [
          { name: 'add', input: { a: 2, b: 3 }, id: 't1' },
          { name: 'broken', input: {}, id: 't2' },
          { name: 'missing', input: {}, id: 't3' },
        ],
      },
      { text: 'Five.', usage: { inputTokens: 7, outputTokens: 1 } },
    ]);
    const usages: number[] = [];
    const result = await converse(model, {
      system: 's',
      messages: [{ role: 'user', content: '2+3?' }],
      tools: [add, broken],
      onUsage: (usage) => usages.push(usage.inputTokens),
    });
    expect(result).toMatchObject({ text: 'Five.', calls: 2, usage: { inputTokens: 17, outputTokens: 6 } });
    expect(usages).toEqual([10, 7]);
    expect(model.requests[0]?.tools?.map((tool) => tool.name)).toEqual(['add', 'broken']);
    expect(model.requests[0]?.tools?.[0]?.inputSchema).toMatchObject({
      type: 'object',
      properties: { a: { type: 'number' } },
    });
    const results = model.requests[1]?.messages.at(-1)?.content;
    expect(results).toEqual([
      { type: 'tool-result', toolCallId: 't1', content: '5' },
      { type: 'tool-result', toolCallId: 't2', content: expect.stringContaining('out of order'), isError: true },
      {
        type: 'tool-result',
        toolCallId: 't3',
        content: expect.stringContaining('Unknown tool missing'),
        isError: true,
      },
    ]);
    expect(result.messages).toHaveLength(4);
  });

  it('stops at maxSteps with LLM_UNAVAILABLE', async () => {
    const call = { toolUse: [{ name: 'add', input: { a: 1, b: 1 } }] };
    const model = scriptedModel([call, call, call]);
    const error = await converse(model, {
      system: 's',
      messages: [{ role: 'user', content: 'loop' }],
      tools: [add],
      maxSteps: 2,
    }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(AgoraError);
    expect(error).toMatchObject({ code: 'LLM_UNAVAILABLE', message: 'LLM tool loop exceeded 2 steps' });
    expect(model.requests).toHaveLength(2);
  });

  it('passes maxTokens, temperature and the signal on to the model', async () => {
    const model = scriptedModel(['ok']);
    const controller = new AbortController();
    await converse(model, {
      system: 's',
      messages: [{ role: 'user', content: 'x' }],
      maxTokens: 99,
      temperature: 0,
      signal: controller.signal,
    });
    expect(model.requests[0]).toMatchObject({ maxTokens: 99, temperature: 0, signal: controller.signal });
  });
});
