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

describe('Metrics.render', () => {
  it('keeps one series per path and protocol, and one routine histogram per protocol', () => {
    const metrics = new Metrics();
    metrics.query('routine', 'echo');
    metrics.query('routine', 'echo');
    metrics.query('failure', 'echo');
    metrics.routineLatency('echo', 0.003);
    metrics.routineLatency('echo', 0.003);
    // Two labels cut to the same 64 characters are one series.
    metrics.query('llm', `${'x'.repeat(70)}a`);
    metrics.query('llm', `${'x'.repeat(70)}b`);
    const text = metrics.render();
    expect(text).toContain('agora_queries_total{path="routine",protocol="echo"} 2');
    expect(text).toContain('agora_queries_total{path="failure",protocol="echo"} 1');
    expect(text).toContain(`agora_queries_total{path="llm",protocol="${'x'.repeat(63)}…"} 2`);
    expect(text).toContain('agora_routine_duration_seconds_bucket{protocol="echo",le="0.0025"} 0');
    expect(text).toContain('agora_routine_duration_seconds_bucket{protocol="echo",le="0.005"} 2');
    expect(text).toContain('agora_routine_duration_seconds_count{protocol="echo"} 2');
    expect(metrics.snapshot().queries).toEqual({ routine: 2, llm: 2, failure: 1 });
  });

  it('renders the routine latency as cumulative buckets: a value on a bound counts in it, one past the last only in +Inf', () => {
    const metrics = new Metrics();
    for (const seconds of [0.0001, 0.001, 0.0011, 0.3, 10, 11]) metrics.routineLatency('echo', seconds);
    const text = metrics.render();
    const bucket = (bound: string) =>
      Number(
        new RegExp(
          `agora_routine_duration_seconds_bucket\\{protocol="echo",le="${bound.replace('+', '\\+')}"\\} (\\d+)`,
        ).exec(text)?.[1],
      );
    expect([
      bucket('0.0005'),
      bucket('0.001'),
      bucket('0.0025'),
      bucket('0.25'),
      bucket('0.5'),
      bucket('5'),
      bucket('10'),
      bucket('+Inf'),
    ]).toEqual([1, 2, 3, 3, 4, 4, 5, 6]);
    expect(text).toContain('agora_routine_duration_seconds_count{protocol="echo"} 6');
  });
});
