import { describe, expect, it } from 'vitest';
import { DashboardRecorder } from '../../src/dashboard/recorder.js';
import { Metrics } from '../../src/metrics.js';

describe('DashboardRecorder', () => {
  it('records what Metrics counts into one-second rates, cost buckets and per-protocol totals', () => {
    let clock = 1_000_000;
    const recorder = new DashboardRecorder({ now: () => clock, costBucketMs: 10_000, rateBuckets: 5 });
    const metrics = new Metrics();
    const detach = recorder.attach(metrics);
    metrics.query('llm', 'Double');
    metrics.llmCall('Double', 'answer', 100, 20);
    clock += 1000;
    metrics.query('routine', 'Double');
    metrics.query('failure', 'unknown', 'Unsupported protocol');
    clock += 10_000;
    metrics.query('routine', 'Double');

    expect(recorder.totals().Double).toEqual({
      routine: 2,
      llm: 1,
      failure: 0,
      llmCalls: 1,
      tokens: 120,
      lastUsedAt: 1_011_000,
    });
    expect(recorder.costs()).toEqual([
      {
        at: 1_000_000,
        protocols: {
          Double: { routine: 1, llm: 1, failure: 0, llmCalls: 1, tokens: 120 },
          unknown: { routine: 0, llm: 0, failure: 1, llmCalls: 0, tokens: 0 },
        },
      },
      { at: 1_010_000, protocols: { Double: { routine: 1, llm: 0, failure: 0, llmCalls: 0, tokens: 0 } } },
    ]);
    // The last five seconds, quiet ones as zeros: the earlier queries have left the window.
    expect(recorder.rates()).toEqual(
      [1_007_000, 1_008_000, 1_009_000, 1_010_000, 1_011_000].map((at) => ({
        at,
        routine: at === 1_011_000 ? 1 : 0,
        llm: 0,
        failure: 0,
      })),
    );
    expect(recorder.failures()).toEqual([{ at: 1_001_000, protocol: 'unknown', reason: 'Unsupported protocol' }]);
    expect(recorder.recent().map((event) => (event.kind === 'query' ? event.path : event.kind))).toEqual([
      'routine',
      'failure',
      'routine',
      'llm',
    ]);

    detach();
    metrics.query('llm', 'Double');
    expect(recorder.totals().Double!.llm).toBe(1);
  });

  it('stays bounded whatever peers send: protocols past the cap share one label, failures and buckets are rings', () => {
    let clock = 0;
    const recorder = new DashboardRecorder({
      now: () => clock,
      maxProtocols: 3,
      maxFailures: 4,
      costBuckets: 2,
      costBucketMs: 1000,
    });
    for (let index = 0; index < 100; index++) {
      recorder.query('failure', `made-up ${index}`, 'x'.repeat(1000));
      clock += 1000;
    }
    expect(Object.keys(recorder.totals())).toEqual(['made-up 0', 'made-up 1', 'made-up 2', '_other']);
    expect(recorder.failures()).toHaveLength(4);
    expect(recorder.failures()[0]!.reason).toHaveLength(200);
    expect(recorder.costs()).toHaveLength(2);
    expect(recorder.recent()).toHaveLength(30);
  });

  it('tells subscribers of each query and LLM call', () => {
    const recorder = new DashboardRecorder({ now: () => 5 });
    const heard: string[] = [];
    const stop = recorder.subscribe((event) => heard.push(`${event.kind}:${event.protocol}`));
    recorder.query('llm', 'A');
    recorder.llmCall('A', 10);
    stop();
    recorder.query('llm', 'B');
    expect(heard).toEqual(['query:A', 'llm:A']);
  });
});
