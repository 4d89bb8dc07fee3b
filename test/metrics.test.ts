import { describe, expect, it } from 'vitest';
import { Metrics } from '../src/metrics.js';

describe('Metrics.summary', () => {
  it('says 1 query and 1 LLM call in the singular, other counts in the plural', () => {
    const metrics = new Metrics();
    expect(metrics.summary()).toBe('0 queries (0 routine, 0 LLM, 0 failed); 0 LLM calls, 0 input + 0 output tokens');
    metrics.query('llm', 'echo');
    metrics.llmCall('echo', 'answer', 12, 1);
    expect(metrics.summary()).toBe('1 query (0 routine, 1 LLM, 0 failed); 1 LLM call, 12 input + 1 output token');
    metrics.query('routine', 'echo');
    metrics.llmCall('echo', 'answer', 3, 4);
    expect(metrics.summary()).toBe('2 queries (1 routine, 1 LLM, 0 failed); 2 LLM calls, 15 input + 5 output tokens');
  });
});
