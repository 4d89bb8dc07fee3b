// The agent dashboard in real Chromium (Debian's `chromium`, driven by playwright-core, which downloads nothing):
// the page loads clean, a query shows in Live, the cost chart has points, a routine the LLM wrote is approved from
// the page and the next query is counted as routine, and the approve call is refused without the token.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent.js';
import { AnthropicModel } from '../../src/llm/anthropic.js';
import { silentLogger } from '../../src/log.js';
import { parseDocument } from '../../src/protocol/document.js';
import { FakeAnthropic, type FakeRequest } from '../../src/testing/fake-anthropic.js';
import { chromiumPath, SCREENSHOT_DIR } from './_browser.js';

const DOUBLE = ['---', 'name: Double', 'description: Double a number.', 'multiround: false', '---', '', 'The sender sends JSON {"n": number}.', 'The receiver replies JSON {"doubled": number}, twice n.', ''].join('\n');
const hash = parseDocument(DOUBLE).hash;
const TOKEN = 'dashboard-test-token';
const ROUTINE = [
  "import { defineRoutine } from 'agora-agents';",
  "import { z } from 'zod';",
  'export default defineRoutine({',
  '  input: z.object({ n: z.number() }),',
  '  output: z.object({ doubled: z.number() }),',
  '  async handle(body) {',
  '    return { doubled: body.n * 2 };',
  '  },',
  '});',
].join('\n');

// The fake LLM by purpose: the routine's code, test queries, or an answer under the protocol.
function reply(request: FakeRequest): string {
  if (request.system.includes('You write routines')) return `\`\`\`ts\n${ROUTINE}\n\`\`\``;
  if (request.system.includes('You write test queries')) return JSON.stringify([{ n: 3 }, { n: -4 }]);
  const n = (JSON.parse(request.lastUserText) as { n?: number }).n ?? 0;
  return JSON.stringify({ doubled: n * 2 });
}

const executablePath = chromiumPath();
if (!executablePath) console.warn('dashboard browser tests skipped: no Chromium found (install Debian\'s chromium, or set AGORA_TEST_CHROMIUM to its path)');

describe.skipIf(!executablePath)('agent dashboard in Chromium', { timeout: 120_000 }, () => {
  let browser: Browser;
  let fake: FakeAnthropic;
  let dir: string;
  let agent: RunningAgent;
  let page: Page;
  let clock = Date.parse('2026-01-01T12:00:00Z');
  const consoleErrors: string[] = [];

  const query = async (n: number) => {
    const response = await fetch(agent.url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ protocolHash: hash, body: { n } }) });
    expect(response.status).toBe(200);
    return (await response.json()) as { body: unknown };
  };
  const shoot = (name: string, selector: string) => page.locator(selector).screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`) });

  beforeAll(async () => {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: executablePath!, headless: true });
    fake = await FakeAnthropic.start({ fallback: reply });
    dir = await mkdtemp(join(tmpdir(), 'agora-dashboard-'));
    await mkdir(join(dir, 'protocols'));
    await writeFile(join(dir, 'protocols', 'double.md'), DOUBLE);
    await mkdir(SCREENSHOT_DIR, { recursive: true });
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
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(error.message));
  });

  afterAll(async () => {
    await browser?.close();
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

    await expect.poll(async () => Number(await page.getAttribute('#cost-chart', 'data-points')), { timeout: 5000 }).toBeGreaterThanOrEqual(3);
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
    const axe = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
    // Evaluated by the devtools protocol: the page's CSP, rightly, refuses injected inline scripts.
    await page.evaluate(axe);
    const results = (await page.evaluate("axe.run({ resultTypes: ['violations'] })")) as { violations: { id: string; impact: string | null; help: string; nodes: unknown[] }[] };
    const serious = results.violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
    expect(serious.map((violation) => `${violation.id}: ${violation.help} (${violation.nodes.length})`)).toEqual([]);
  });
});
