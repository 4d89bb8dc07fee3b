// Usage reports on a hub: numbers only, a ring buffer per series and a bounded number of series, the token's scope
// when the hub has tokens, the mount's own body cap, and the dashboard's Cost panel computed from them.
import { afterEach, describe, expect, it } from 'vitest';
import { createHubDashboard } from '../../src/dashboard/hub-dashboard.js';
import { usageView } from '../../src/dashboard/hub-usage.js';
import { HubClient } from '../../src/hub/client.js';
import { startHub, type RunningHub, type StartHubOptions } from '../../src/hub/server.js';
import { MAX_SERIES, UsageLog, USAGE_MAX_BODY_BYTES } from '../../src/hub/usage.js';
import { silentLogger } from '../../src/log.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function hub(options: StartHubOptions = {}): Promise<RunningHub> {
  const running = await startHub({
    port: 0,
    tickMs: 0,
    rooms: false,
    logger: silentLogger,
    mounts: (core) => [
      createHubDashboard(core, { costWindow: 2, ...(options.tokens ? { tokens: options.tokens } : {}) }),
    ],
    ...options,
  });
  cleanups.push(() => running.close());
  return running;
}

const report = (calls: number, dollars?: number) => ({
  calls,
  inputTokens: 100 * calls,
  outputTokens: 10 * calls,
  ...(dollars === undefined ? {} : { dollars }),
});

async function post(url: string, body: unknown, token?: string) {
  const response = await fetch(`${url}/usage`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

describe('the usage log', () => {
  it('keeps the last reports of each series, numbering every query, and drops the least recent series beyond the cap', () => {
    const log = new UsageLog({ maxReports: 3 });
    for (let calls = 1; calls <= 5; calls++) log.add([{ series: 'a', ...report(calls) }]);
    const [a] = log.series();
    expect(a!.total).toBe(5);
    expect(a!.entries.map((entry) => [entry.query, entry.calls])).toEqual([
      [3, 3],
      [4, 4],
      [5, 5],
    ]);
    for (let index = 0; index < MAX_SERIES; index++) log.add([{ series: `s${index}`, ...report(1) }]);
    expect(log.series().map((one) => one.name)).not.toContain('a');
    expect(log.series()).toHaveLength(MAX_SERIES);
  });

  it('draws a moving average per series, in dollars when every report has them, and sums the last window by path', () => {
    const log = new UsageLog({ maxReports: 10 });
    log.add([
      { series: 'nl', path: 'natural-language', ...report(4, 0.04) },
      { series: 'nl', path: 'natural-language', ...report(4, 0.02) },
      { series: 'agora', path: 'negotiation', ...report(6, 0.06) },
      { series: 'agora', path: 'protocol-routine', ...report(0, 0) },
      { series: 'agora', path: 'protocol-routine', ...report(0, 0) },
    ]);
    const view = usageView(log, 2);
    expect(view.unit).toBe('dollars');
    const agora = view.series.find((one) => one.name === 'agora')!;
    expect(agora.average.map((value) => Number(value.toFixed(6)))).toEqual([0.06, 0.03, 0]);
    expect(agora.byPath).toEqual({ 'protocol-routine': { queries: 2, calls: 0, tokens: 0, cost: 0 } });
    log.add([{ series: 'nl', ...report(1) }]);
    expect(usageView(log, 2).unit).toBe('tokens');
  });
});

describe('POST /usage', () => {
  it('needs the token when the hub has tokens, for writing and for reading', async () => {
    const running = await hub({ tokens: ['secret'] });
    expect((await post(running.url, report(1))).status).toBe(401);
    expect((await fetch(`${running.url}/usage`)).status).toBe(401);
    const client = new HubClient({ url: running.url, token: 'secret' });
    await client.reportUsage([
      { series: 'agora', path: 'protocol-llm', ...report(2, 0.01) },
      { series: 'agora', path: 'protocol-routine', ...report(0, 0) },
    ]);
    const read = await fetch(`${running.url}/usage`, { headers: { authorization: 'Bearer secret' } });
    const body = (await read.json()) as { series: { name: string; total: number }[] };
    expect(body.series.map((one) => [one.name, one.total])).toEqual([['agora', 2]]);
    const state = await fetch(`${running.url}/dashboard/api/state`, { headers: { authorization: 'Bearer secret' } });
    const usage = ((await state.json()) as { usage: { series: { average: number[] }[] } }).usage;
    expect(usage.series[0]!.average).toEqual([0.01, 0.005]);
  });

  it('keeps numbers only: a report with any other field, text where a number goes, or an unknown path is a 400', async () => {
    const running = await hub();
    for (const bad of [
      { ...report(1), prompt: 'the text of a query' },
      { ...report(1), calls: 'many' },
      { ...report(1), path: 'telepathy' },
      { ...report(1), series: 'Not A Slug!' },
      { ...report(1), calls: -1 },
      { reports: [] },
    ]) {
      const answer = await post(running.url, bad);
      expect(answer.status, JSON.stringify(bad)).toBe(400);
      expect(String(answer.json.error)).toMatch(/^Invalid usage report/);
    }
    expect(running.hub.usage.series()).toEqual([]);
  });

  it('refuses a body over its own cap (413) and a batch of more than 100 reports (400)', async () => {
    const running = await hub();
    const big = JSON.stringify({ ...report(1), padding: 'x'.repeat(USAGE_MAX_BODY_BYTES) });
    expect((await post(running.url, big)).status).toBe(413);
    expect((await post(running.url, { reports: Array.from({ length: 101 }, () => report(1)) })).status).toBe(400);
    expect((await post(running.url, { reports: Array.from({ length: 100 }, () => report(1)) })).status).toBe(202);
  });

  it('is off with maxUsageReports 0: a 404 that says so', async () => {
    const running = await hub({ maxUsageReports: 0 });
    const answer = await post(running.url, report(1));
    expect(answer).toEqual({
      status: 404,
      json: { status: 'failure', error: 'This hub keeps no usage reports (--usage-reports 0)' },
    });
  });
});
