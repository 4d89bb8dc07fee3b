// Where the browser tests find Chromium and write their screenshots, and the doubling agent's fake LLM they share.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import type { FakeRequest } from '../../src/testing/fake-anthropic.js';

/**
 * Chromium's path: `AGORA_TEST_CHROMIUM` (set by `.ci/run`), else Debian's `/usr/bin/chromium`; undefined when neither
 * exists.
 */
export function chromiumPath(): string | undefined {
  const candidates = [process.env.AGORA_TEST_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'];
  return candidates.find((path): path is string => typeof path === 'string' && path !== '' && existsSync(path));
}

/** Screenshots of each panel, written by every run (gitignored). */
export const SCREENSHOT_DIR = fileURLToPath(new URL('../../test-output/dashboard/', import.meta.url));

/** Collects the page's console errors and uncaught exceptions, from now on. */
export function collectErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(error.message));
  return errors;
}

/** The serious and critical violations axe-core finds on the page as it is now (labels, contrast, keyboard…). */
export async function seriousViolations(page: Page): Promise<string[]> {
  const axe = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  // Evaluated by the devtools protocol: the page's CSP, rightly, refuses injected inline scripts.
  await page.evaluate(axe);
  const results = (await page.evaluate("axe.run({ resultTypes: ['violations'] })")) as {
    violations: { id: string; impact: string | null; help: string; nodes: unknown[] }[];
  };
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id}: ${violation.help} (${violation.nodes.length})`);
}

/** The routine the fake LLM writes for a protocol that doubles `n`. */
export const DOUBLING_ROUTINE = [
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

/** The fake LLM of a doubling agent, by purpose: the routine's code, test queries, or an answer under the protocol. */
export function doublingReply(request: FakeRequest): string {
  if (request.system.includes('You write routines')) return `\`\`\`ts\n${DOUBLING_ROUTINE}\n\`\`\``;
  if (request.system.includes('You write test queries')) return JSON.stringify([{ n: 3 }, { n: -4 }]);
  const n = (JSON.parse(request.lastUserText) as { n?: number }).n ?? 0;
  return JSON.stringify({ doubled: n * 2 });
}
