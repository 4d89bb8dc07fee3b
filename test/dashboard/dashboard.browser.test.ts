// The agent dashboard in real Chromium (Debian's `chromium`, driven by playwright-core, which downloads nothing):
// the page loads clean, a query shows in Live, the cost chart has points, a routine the LLM wrote is approved from
// the page and the next query is counted as routine, and the approve call is refused without the token.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent.js';
import { AnthropicModel } from '../../src/llm/anthropic/model.js';
import { createHubDashboard } from '../../src/dashboard/hub-dashboard.js';
import { startHub } from '../../src/hub/server.js';
import { silentLogger } from '../../src/log.js';
import { startLoopbackAgent } from '../hub/_agents.js';
import { parseDocument } from '../../src/protocol/document.js';
import { FakeAnthropic } from '../../src/testing/fake-anthropic.js';
import { chromiumPath, collectErrors, doublingReply, SCREENSHOT_DIR, seriousViolations } from './_browser.js';

const DOUBLE = [
  '---',
  'name: Double',
  'description: Double a number.',
  'multiround: false',
  '---',
  '',
  'The sender sends JSON {"n": number}.',
  'The receiver replies JSON {"doubled": number}, twice n.',
  '',
].join('\n');
const hash = parseDocument(DOUBLE).hash;
const TOKEN = 'dashboard-test-token';

const executablePath = chromiumPath();
if (!executablePath)
  console.warn(
    "dashboard browser tests skipped: no Chromium found (install Debian's chromium, or set AGORA_TEST_CHROMIUM to its path)",
  );

// One browser for the file (CI has two cores): each dashboard gets its own page.
let browser: Browser;
beforeAll(async () => {
  if (!executablePath) return;
  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({ executablePath, headless: true });
  await mkdir(SCREENSHOT_DIR, { recursive: true });
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

describe.skipIf(!executablePath)('agent dashboard in Chromium', { timeout: 120_000 }, () => {
  let fake: FakeAnthropic;
  let dir: string;
  let agent: RunningAgent;
  let page: Page;
  let clock = Date.parse('2026-01-01T12:00:00Z');
  let consoleErrors: string[];

  const query = async (n: number) => {
    const response = await fetch(agent.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ protocolHash: hash, body: { n } }),
    });
    expect(response.status).toBe(200);
    return (await response.json()) as { body: unknown };
  };
  const shoot = (name: string, selector: string) =>
    page.locator(selector).screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`) });

  beforeAll(async () => {
    fake = await FakeAnthropic.start({ fallback: doublingReply });
    dir = await mkdtemp(join(tmpdir(), 'agora-dashboard-'));
    await mkdir(join(dir, 'protocols'));
    await writeFile(join(dir, 'protocols', 'double.md'), DOUBLE);
    agent = await startAgent({
      dir,
      name: 'doubler',
      port: 0,
      host: '127.0.0.1',
      llm: new AnthropicModel({ baseURL: fake.url, apiKey: 'test', maxRetries: 0, model: 'claude-test' }),
      routineThreshold: 2,
      tokens: [TOKEN],
      watch: false,
      logger: silentLogger,
      faces: false,
      // Cost buckets one second wide on a clock the test moves: each phase lands in its own bucket.
      dashboard: { recorder: { now: () => clock, costBucketMs: 1000 } },
    });
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    consoleErrors = collectErrors(page);
  });

  afterAll(async () => {
    await page?.close();
    await agent?.close();
    await fake?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('asks for the token, then loads every panel with no console error and a CSP without inline script', async () => {
    const response = await page.goto(agent.dashboardUrl!);
    expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
    await page.locator('#sign-in').waitFor({ state: 'visible' });
    await page.fill('#token', TOKEN);
    await page.click('#sign-in button[type=submit]');
    await expect.poll(() => page.textContent('#agent-name')).not.toBe('');
    await page.locator('#protocol-rows tr[data-hash] .answered', { hasText: 'LLM' }).waitFor();
    expect(await page.evaluate("sessionStorage.getItem('agora-dashboard-token')")).toBe(TOKEN);
    expect(page.url()).not.toContain(TOKEN);
    expect(consoleErrors).toEqual([]);
  });

  it('shows a query in Live within a second of its answer', async () => {
    expect((await query(2)).body).toEqual({ doubled: 4 });
    await page.locator('#recent-queries li[data-protocol="Double"][data-path="llm"]').waitFor({ timeout: 1000 });
    await page.locator('#protocol-rows tr[data-hash] td', { hasText: '0 / 1 / 0' }).waitFor({ timeout: 2000 });
    await shoot('protocols', '#protocols');
  });

  it('shows the protocol text on click and is usable from the keyboard', async () => {
    await page.reload();
    await page.locator('#protocol-rows button').waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Skip to the panels');
    await page.locator('#protocol-rows button').focus();
    await page.keyboard.press('Enter');
    await page.locator('#protocol-text pre', { hasText: 'The receiver replies JSON' }).waitFor();
  });

  it('writes a routine, approves it from the page, counts the next query as routine, and the cost chart has points', async () => {
    clock += 1000;
    await query(5);
    await agent.generator!.idle();
    // Pushed when the generator writes the status: no query, no reload.
    const card = page.locator('article.routine[data-status="pending"]');
    await card.waitFor({ timeout: 2000 });
    // The next query is still the LLM's: the routine awaits approval.
    clock += 1000;
    expect((await query(7)).body).toEqual({ doubled: 14 });
    await expect.poll(() => card.locator('table tbody tr').count()).toBeGreaterThan(0);
    expect(await card.locator('pre code').textContent()).toContain('body.n * 2');
    await shoot('routines-pending', '#routines');

    await card.getByRole('button', { name: 'Approve' }).click();
    await page.locator('article.routine[data-status="approved"]').waitFor({ timeout: 5000 });
    await page.locator('#protocol-rows .answered', { hasText: 'generated routine' }).waitFor({ timeout: 5000 });

    clock += 1000;
    const before = agent.receiver.counters.snapshot().queries.routine;
    expect((await query(8)).body).toEqual({ doubled: 16 });
    expect(agent.receiver.counters.snapshot().queries.routine).toBe(before + 1);
    await page.locator('#recent-queries li[data-protocol="Double"][data-path="routine"]').waitFor({ timeout: 1000 });

    await expect
      .poll(async () => Number(await page.getAttribute('#cost-chart', 'data-points')), { timeout: 5000 })
      .toBeGreaterThanOrEqual(3);
    await shoot('live', '#live');
    await shoot('cost', '#cost');
    await shoot('routines', '#routines');
    await page.screenshot({ path: join(SCREENSHOT_DIR, 'dashboard.png'), fullPage: true });
    expect(consoleErrors).toEqual([]);
  });

  it('refuses the approve call without the token', async () => {
    const url = `${agent.dashboardUrl}api/routines/double-${hash.slice(0, 8)}/approve`;
    const refused = await fetch(url, { method: 'POST' });
    expect(refused.status).toBe(401);
    const wrong = await fetch(url, { method: 'POST', headers: { authorization: 'Bearer wrong' } });
    expect(wrong.status).toBe(401);
    // And the page's own call is refused once the token is gone from the tab.
    await page.evaluate("sessionStorage.removeItem('agora-dashboard-token')");
    const status = await page.evaluate(async (path) => (await fetch(path, { method: 'POST' })).status, url);
    expect(status).toBe(401);
  });

  it('passes axe-core with no serious or critical violation', async () => {
    await page.evaluate(`sessionStorage.setItem('agora-dashboard-token', '${TOKEN}')`);
    await page.reload();
    await page.locator('article.routine').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('shows Approve and Reject only where they apply: none on an approved routine, Approve alone on a rejected one', async () => {
    const approved = page.locator('article.routine[data-status="approved"]');
    await approved.waitFor();
    expect(await approved.locator('button').count()).toBe(0);
    const id = await approved.getAttribute('data-id');
    const rejected = await fetch(`${agent.dashboardUrl}api/routines/${id}/reject`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(rejected.status).toBe(200);
    await page.reload();
    const card = page.locator('article.routine[data-status="rejected"]');
    await card.waitFor();
    expect(await card.locator('button').allTextContents()).toEqual(['Approve']);
  });

  it('keeps every scrollable region reachable by keyboard, with a label, and passes axe-core on a narrow screen', async () => {
    await page.setViewportSize({ width: 420, height: 900 });
    await page.reload();
    await page.locator('article.routine table').waitFor();
    const regions = (await page.evaluate(
      "[...document.querySelectorAll('.scroll, .feed')].map((node) => ({ tabindex: node.getAttribute('tabindex'), label: Boolean(node.getAttribute('aria-label') || node.getAttribute('aria-labelledby')) }))",
    )) as { tabindex: string | null; label: boolean }[];
    expect(regions.length).toBeGreaterThanOrEqual(5);
    expect(regions.filter((region) => region.tabindex !== '0' || !region.label)).toEqual([]);
    // The Expected and Actual cells wrap inside the card rather than being cut off.
    const cut = await page.evaluate(
      "[...document.querySelectorAll('article.routine td:nth-child(4), article.routine td:nth-child(5)')].filter((cell) => cell.getBoundingClientRect().right > cell.closest('article').getBoundingClientRect().right + 1).length",
    );
    expect(cut).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);
    await page.setViewportSize({ width: 1400, height: 1000 });
  });

  it('shows no Approve or Reject in read-only mode (no token), and passes axe-core', async () => {
    const readOnly = await startAgent({
      dir,
      name: 'doubler',
      port: 0,
      host: '127.0.0.1',
      llm: null,
      watch: false,
      logger: silentLogger,
      faces: false,
    });
    const view = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    try {
      const errors = collectErrors(view);
      await view.goto(readOnly.dashboardUrl!);
      const card = view.locator('article.routine[data-status="rejected"]');
      await card.waitFor();
      await view.locator('#review-note', { hasText: 'Read-only' }).waitFor();
      expect(await view.locator('article.routine button').count()).toBe(0);
      expect(await seriousViolations(view)).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await view.close();
      await readOnly.close();
    }
  });
});

describe.skipIf(!executablePath)('hub dashboard in Chromium', { timeout: 60_000 }, () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('shows registered agents up with their protocols, the catalogue and chains with hops, pushes a new agent, and passes axe-core', async () => {
    const hub = await startHub({
      port: 0,
      tickMs: 0,
      allowPrivateAgents: true,
      logger: silentLogger,
      mounts: (core) => [createHubDashboard(core, { checkMs: 50 })],
    });
    cleanups.push(() => hub.close());
    const meteo = await startLoopbackAgent(
      { 'Weather forecast': 'Gives the weather forecast for a city.' },
      () => 'sunny',
    );
    cleanups.push(meteo.close);
    await hub.hub.register({ url: meteo.url, name: 'meteo' });
    const at = Date.now();
    const hop = {
      agentId: 'a1',
      agentName: 'meteo',
      url: meteo.url,
      by: 'keyword',
      reason: 'forecast',
      ok: true,
      result: { forecast: 'sunny' },
      startedAt: at,
      finishedAt: at + 12,
      usage: { inputTokens: 1234, outputTokens: 56, model: 'small' },
    };
    await hub.hub.saveRun(
      {
        id: 'chain-1',
        goal: 'Weather in Paris, then pack a bag',
        status: 'done',
        hops: [
          hop,
          {
            ...hop,
            agentName: 'packer',
            ok: false,
            result: undefined,
            error: 'Unsupported protocol',
            usage: undefined,
            startedAt: at + 12,
            finishedAt: at + 30,
          },
        ],
        next: null,
        maxHops: 5,
        createdAt: at,
        updatedAt: at + 30,
        owner: 'test#1#x',
        leaseUntil: at,
      },
      1000,
    );

    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    cleanups.push(() => page.close());
    const errors = collectErrors(page);
    await page.goto(`${hub.url}/dashboard/`);
    await page.locator('#agent-rows tr[data-status="up"]', { hasText: 'Weather forecast' }).waitFor();
    await page.locator('#catalogue-rows th', { hasText: 'Weather forecast' }).waitFor();
    await page.locator('#room-list', { hasText: 'Rooms are not available on this hub.' }).waitFor();
    const chain = page.locator('#chain-list article', { hasText: 'Weather in Paris' });
    await chain.locator('li', { hasText: 'meteo (keyword: forecast) · 12 ms' }).waitFor();
    await chain.locator('li .error', { hasText: 'Unsupported protocol' }).waitFor();
    // The hops as a waterfall on the chain's 30 ms: meteo from 0 for 12 ms (40%), packer from 12 ms for 18 (60%).
    const bars = await chain.locator('.waterfall-bar').evaluateAll((nodes) =>
      nodes.map((node) => {
        const track = node.parentElement!.getBoundingClientRect();
        const box = node.getBoundingClientRect();
        return { left: (box.left - track.left) / track.width, width: box.width / track.width };
      }),
    );
    expect(bars).toHaveLength(2);
    expect(bars[0]!.left).toBeCloseTo(0, 2);
    expect(bars[0]!.width).toBeCloseTo(0.4, 2);
    expect(bars[1]!.left).toBeCloseTo(0.4, 2);
    expect(bars[1]!.width).toBeCloseTo(0.6, 2);
    await chain.locator('.waterfall[aria-label="packer: from 12 ms, for 18 ms; tokens: —"]').waitFor();
    // Beside each bar, the tokens its agent reported: meteo's LLM turn, and "—" for packer, which reported none.
    expect(await chain.locator('.waterfall-tokens').allTextContents()).toEqual([
      'tokens: 1234 in / 56 out (small)',
      'tokens: —',
    ]);

    // A hostile name is shown as text, never as markup.
    const hostile = await startLoopbackAgent({ 'Air quality': 'Pollution levels.' }, () => 'ok');
    cleanups.push(hostile.close);
    await hub.hub.register({ url: hostile.url, name: '<img src=x onerror=alert(1)>' });
    await page.locator('#agent-rows th', { hasText: '<img src=x onerror=alert(1)>' }).waitFor({ timeout: 2000 });
    expect(await page.locator('#agent-rows img').count()).toBe(0);

    await page.locator('#agents').screenshot({ path: join(SCREENSHOT_DIR, 'hub-agents.png') });
    await page.locator('#catalogue').screenshot({ path: join(SCREENSHOT_DIR, 'hub-catalogue.png') });
    await page.locator('#chains').screenshot({ path: join(SCREENSHOT_DIR, 'hub-chains.png') });
    expect(await seriousViolations(page)).toEqual([]);
    expect(errors).toEqual([]);
  });
});
