// The agent dashboard's layout in real Chromium, at a laptop's 1280 px and a phone's 390 px: the page never scrolls
// sideways, the protocols table fits its panel on the laptop, no table header runs into its neighbour, and a fresh
// agent's cost charts show their axes and say there is no data yet instead of staying blank.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent.js';
import { AnthropicModel } from '../../src/llm/anthropic/model.js';
import { silentLogger } from '../../src/log.js';
import { parseDocument } from '../../src/protocol/document.js';
import { FakeAnthropic } from '../../src/testing/fake-anthropic.js';
import { chromiumPath, collectErrors, doublingReply, SCREENSHOT_DIR } from './_browser.js';

// A name and a file name as long as real ones get.
const DOCUMENT = [
  '---',
  'name: Double a number given as JSON',
  'description: Double a number.',
  'multiround: false',
  '---',
  '',
  'The sender sends JSON {"n": number}.',
  'The receiver replies JSON {"doubled": number}, twice n.',
  '',
].join('\n');
const hash = parseDocument(DOCUMENT).hash;

const LAPTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

// The page-side code is plain JavaScript in strings, as in the other browser tests: the project's types hold no DOM.

/** How far the page can scroll sideways, in px (0 when it cannot). */
const sidewaysScroll = (page: Page) =>
  page.evaluate('document.documentElement.scrollWidth - window.innerWidth') as Promise<number>;

/**
 * Header cells whose text runs into a neighbour's or out of its own cell: the text's box (a Range over the cell's
 * contents) is what a reader sees, the cell's box alone stays in place while its text spills over.
 */
const overlappingHeaders = (page: Page) =>
  page.evaluate(`(() => {
    const clashes = [];
    for (const row of document.querySelectorAll('thead tr')) {
      const cells = [...row.querySelectorAll('th')].map((cell) => {
        const range = document.createRange();
        range.selectNodeContents(cell);
        const name = cell.textContent.trim();
        return { name, cell: cell.getBoundingClientRect(), text: range.getBoundingClientRect() };
      });
      cells.forEach((one, index) => {
        if (one.text.left < one.cell.left - 0.5 || one.text.right > one.cell.right + 0.5)
          clashes.push('"' + one.name + '" spills out of its cell');
        for (const other of cells.slice(index + 1)) {
          const apart =
            one.text.right <= other.text.left + 0.5 ||
            other.text.right <= one.text.left + 0.5 ||
            one.text.bottom <= other.text.top + 0.5 ||
            other.text.bottom <= one.text.top + 0.5;
          if (!apart) clashes.push('"' + one.name + '" overlaps "' + other.name + '"');
        }
      });
    }
    return clashes;
  })()`) as Promise<string[]>;

/** Inked pixels in the strip along a chart canvas's bottom (its time axis) and left edge (its value axis). */
const axisInk = (page: Page, id: string) =>
  page.evaluate(`(() => {
    const canvas = document.querySelector(${JSON.stringify(`#${id} canvas`)});
    if (!canvas) return { bottom: 0, left: 0 };
    const context = canvas.getContext('2d');
    const count = (x, y, width, height) => {
      const pixels = context.getImageData(x, y, width, height).data;
      let inked = 0;
      for (let index = 3; index < pixels.length; index += 4) if (pixels[index] > 0) inked += 1;
      return inked;
    };
    const strip = Math.round(canvas.height * 0.15);
    return {
      bottom: count(0, canvas.height - strip, canvas.width, strip),
      left: count(0, 0, Math.round(canvas.width * 0.1), canvas.height - strip),
    };
  })()`) as Promise<{ bottom: number; left: number }>;

const executablePath = chromiumPath();

describe.skipIf(!executablePath)('agent dashboard layout in Chromium', { timeout: 120_000 }, () => {
  let browser: Browser;
  let fake: FakeAnthropic;
  let dir: string;
  let agent: RunningAgent;
  let clock = Date.parse('2026-01-01T12:00:00Z');

  const open = async (viewport: { width: number; height: number }) => {
    const page = await browser.newPage({ viewport });
    const errors = collectErrors(page);
    await page.goto(agent.dashboardUrl!);
    await page.locator('#protocol-rows tr[data-hash]').waitFor();
    await page.locator('#cost-totals div').first().waitFor();
    return { page, errors };
  };

  beforeAll(async () => {
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath, headless: true });
    await mkdir(SCREENSHOT_DIR, { recursive: true });
    fake = await FakeAnthropic.start({ fallback: doublingReply });
    dir = await mkdtemp(join(tmpdir(), 'agora-dashboard-layout-'));
    await mkdir(join(dir, 'protocols'));
    await writeFile(join(dir, 'protocols', 'double-a-number-given-as-json.md'), DOCUMENT);
    agent = await startAgent({
      dir,
      name: 'doubler',
      port: 0,
      host: '127.0.0.1',
      llm: new AnthropicModel({ baseURL: fake.url, apiKey: 'test', maxRetries: 0, model: 'claude-test' }),
      routineThreshold: 2,
      watch: false,
      logger: silentLogger,
      faces: false,
      dashboard: { recorder: { now: () => clock, costBucketMs: 1000 } },
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await agent?.close();
    await fake?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("shows a fresh agent's cost charts with their axes and a no-data text, at 1280 px and at 390 px", async () => {
    for (const viewport of [LAPTOP, PHONE]) {
      const { page, errors } = await open(viewport);
      try {
        for (const id of ['cost-chart', 'path-chart']) {
          const ink = await axisInk(page, id);
          expect(ink.bottom, `${id}'s time axis at ${viewport.width} px`).toBeGreaterThan(50);
          expect(ink.left, `${id}'s value axis at ${viewport.width} px`).toBeGreaterThan(20);
          const empty = page.locator(`figure:has(#${id}) .chart-empty`);
          expect(await empty.isVisible(), `${id}'s empty-state text at ${viewport.width} px`).toBe(true);
          expect(await empty.textContent()).toContain('No data yet');
        }
        expect(await sidewaysScroll(page)).toBeLessThanOrEqual(0);
        expect(await overlappingHeaders(page)).toEqual([]);
        await page.screenshot({ path: join(SCREENSHOT_DIR, `fresh-${viewport.width}.png`), fullPage: true });
        expect(errors).toEqual([]);
      } finally {
        await page.close();
      }
    }
  });

  it('keeps an agent that served queries (a routine with its checks) within a 1280 or 390 px screen', async () => {
    for (const n of [1, 2, 3]) {
      clock += 1000;
      const response = await fetch(agent.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ protocolHash: hash, body: { n } }),
      });
      expect(response.status).toBe(200);
    }
    await agent.generator!.idle();
    for (const viewport of [LAPTOP, PHONE]) {
      const { page, errors } = await open(viewport);
      try {
        await page.locator('article.routine table tbody tr').first().waitFor();
        await expect
          .poll(async () => Number(await page.getAttribute('#cost-chart', 'data-points')))
          .toBeGreaterThanOrEqual(3);
        expect(await page.locator('figure:has(#cost-chart) .chart-empty').isVisible()).toBe(false);
        expect(await sidewaysScroll(page), `page scrolls sideways at ${viewport.width} px`).toBeLessThanOrEqual(0);
        expect(await overlappingHeaders(page)).toEqual([]);
        if (viewport === LAPTOP) {
          const table = await page
            .locator('#protocols .scroll')
            .evaluate((node) => ({ content: node.scrollWidth, box: node.clientWidth }));
          expect(table.content, 'the protocols table is wider than its panel').toBeLessThanOrEqual(table.box);
          // A window narrowed to a phone's width takes the charts with it.
          await page.setViewportSize(PHONE);
          await expect.poll(() => sidewaysScroll(page)).toBeLessThanOrEqual(0);
          await page.setViewportSize(LAPTOP);
        }
        await page.screenshot({ path: join(SCREENSHOT_DIR, `served-${viewport.width}.png`), fullPage: true });
        expect(errors).toEqual([]);
      } finally {
        await page.close();
      }
    }
  });
});
