// The hub dashboard's Cost panel in real Chromium (Debian's `chromium`, driven by playwright-core): as agents report
// queries to the hub, the page draws each series' cost per query and keeps it up to date from the live feed, with
// the last window by path in its table, no console error, and no serious accessibility violation.
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHubDashboard } from '../../src/dashboard/hub-dashboard.js';
import { HubClient } from '../../src/hub/client.js';
import { startHub, type RunningHub } from '../../src/hub/server.js';
import type { UsageReport } from '../../src/hub/usage.js';
import { silentLogger } from '../../src/log.js';
import { chromiumPath, collectErrors, SCREENSHOT_DIR, seriousViolations } from './_browser.js';

const executablePath = chromiumPath();

describe.skipIf(!executablePath)('hub dashboard Cost panel in Chromium', { timeout: 120_000 }, () => {
  let browser: Browser;
  let running: RunningHub;
  let page: Page;
  let errors: string[];
  let client: HubClient;

  beforeAll(async () => {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: executablePath!, headless: true });
    running = await startHub({
      port: 0,
      tickMs: 0,
      rooms: false,
      logger: silentLogger,
      mounts: (hub) => [createHubDashboard(hub, { costWindow: 4, checkMs: 100, logger: silentLogger })],
    });
    client = new HubClient({ url: running.url });
    page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    errors = collectErrors(page);
  }, 60_000);

  afterAll(async () => {
    await page?.close();
    await browser?.close();
    await running?.close();
  });

  const reports = (series: string, count: number, dollars: number, path: UsageReport['path']): UsageReport[] =>
    Array.from({ length: count }, () => ({ series, path, calls: 4, inputTokens: 1000, outputTokens: 100, dollars }));
  const dataset = (name: 'points' | 'last') =>
    page.locator('#cost-chart').evaluate((node, key) => node.getAttribute(`data-${key}`) ?? '', name);

  it('draws the curves as queries are reported, and follows them live', async () => {
    await page.goto(`${running.url}/dashboard/`);
    await expect.poll(() => page.locator('#cost-note').textContent()).toMatch(/^No usage reported yet/);

    await client.reportUsage([
      ...reports('natural-language-only', 6, 0.004, 'natural-language'),
      ...reports('agora', 6, 0.004, 'natural-language'),
    ]);
    await expect.poll(() => dataset('points')).toBe('6,6');
    expect(await page.locator('#cost-chart canvas').count()).toBeGreaterThan(0);

    // Agora's queries turn cheap: its curve falls while the other stays flat, pushed without a reload.
    await client.reportUsage([
      ...reports('natural-language-only', 4, 0.004, 'natural-language'),
      ...reports('agora', 4, 0, 'protocol-routine'),
    ]);
    await expect.poll(() => dataset('points')).toBe('10,10');
    expect((await dataset('last')).split(',').map(Number)).toEqual([0, expect.closeTo(0.004, 9)]); // agora, then natural-language-only
    const agoraRow = page.locator('#usage-rows tr', { hasText: 'protocol-routine' });
    await expect
      .poll(() => agoraRow.locator('td').allTextContents())
      .toEqual(['protocol-routine', '4', '16', '4400', '$0.00000', '—']);
    await page.locator('#cost').screenshot({ path: join(SCREENSHOT_DIR, 'hub-cost.png') });
    expect(await seriousViolations(page)).toEqual([]);
    expect(errors).toEqual([]);
  });
});
