import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { callTool, defineTool, isTool, toolInputJsonSchema } from '../../src/tool/define.js';

const forecast = defineTool({
  name: 'get_forecast',
  description: 'Forecast for a city',
  input: z.object({ city: z.string() }),
  run: ({ city }, context) => ({ city, sky: 'sunny', aborted: context.signal?.aborted ?? null }),
});
const shout = defineTool({
  name: 'shout',
  description: 'Upper-cases a text',
  input: z.string(),
  run: (text) => text.toUpperCase(),
});

describe('defineTool', () => {
  it('returns a frozen tool that isTool recognizes', () => {
    expect(Object.isFrozen(forecast)).toBe(true);
    expect(isTool(forecast)).toBe(true);
    expect(isTool({ name: 'plain', description: 'x', input: z.string(), run: () => 1 })).toBe(true);
    for (const value of [null, undefined, 'tool', { name: 'x' }, { name: 'x', run: () => 1 }])
      expect(isTool(value)).toBe(false);
  });

  it('refuses a name the LLM APIs cannot carry, with an AgoraError', () => {
    for (const name of ['', 'has space', 'x'.repeat(65), 'dot.ted']) {
      expect(() => defineTool({ name, description: 'x', input: z.string(), run: () => 1 })).toThrow(
        expect.objectContaining({
          name: 'AgoraError',
          code: 'INVALID_ARGUMENT',
          message: expect.stringContaining('Invalid tool name'),
        }),
      );
    }
  });
});

describe('toolInputJsonSchema', () => {
  it('offers an object input as it is, without $schema', () => {
    expect(toolInputJsonSchema(forecast)).toMatchObject({
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
    });
    expect(toolInputJsonSchema(forecast)).not.toHaveProperty('$schema');
  });

  it('wraps any other input as { value }', () => {
    expect(toolInputJsonSchema(shout)).toEqual({
      type: 'object',
      properties: { value: { type: 'string' } },
      required: ['value'],
    });
  });
});

describe('callTool', () => {
  it('validates the input and runs the tool with its context', async () => {
    const controller = new AbortController();
    expect(await callTool(forecast, { city: 'Paris' }, { signal: controller.signal })).toEqual({
      city: 'Paris',
      sky: 'sunny',
      aborted: false,
    });
  });

  it('unwraps { value } for a tool whose input is not an object', async () => {
    expect(await callTool(shout, 'hi')).toBe('HI');
    expect(await callTool(shout, { value: 'hi' })).toBe('HI');
  });

  it('refuses an invalid input with an AgoraError naming the tool and the issue', async () => {
    const error = await callTool(forecast, { city: 3 }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: 'AgoraError', code: 'INVALID_ARGUMENT' });
    expect((error as Error).message).toMatch(/^Invalid input for tool get_forecast: .*city/s);
    await expect(callTool(shout, { value: 3 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
