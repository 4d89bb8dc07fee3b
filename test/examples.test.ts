import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PROMPT_MARKERS } from '../examples/weather/brain.js';
import { runNode, type RunResult } from './helpers/cli.js';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Runs an example as its users would, offline: no Anthropic credentials reach it, so the fake brain answers. */
function runExample(script: string, args: string[] = []): Promise<RunResult> {
  const env = { ANTHROPIC_API_KEY: undefined, ANTHROPIC_AUTH_TOKEN: undefined };
  return runNode(['--import', 'tsx', script, ...args], { env, timeoutMs: 300_000 });
}

describe('examples', () => {
  it('finds every prompt marker of the fake brain in the framework sources', async () => {
    const files = (await readdir(join(root, 'src'), { recursive: true })).filter((name) => name.endsWith('.ts'));
    const sources = (await Promise.all(files.map((name) => readFile(join(root, 'src', name), 'utf8')))).join('\n');
    // Prompts are built from string pieces: the marker must sit inside one of them.
    for (const [kind, marker] of Object.entries(PROMPT_MARKERS))
      expect(sources.includes(marker), `${kind}: ${marker}`).toBe(true);
  });

  it(
    'weather: goes from natural language to a negotiated protocol to routines, every answer right',
    { timeout: 240_000 },
    async () => {
      const { code, stdout, stderr } = await runExample('examples/weather/main.ts');
      expect(code, `${stdout}\n${stderr}`).toBe(0);
      expect(stderr).toBe('');
      expect(stdout).toContain('by the hand-written routine, 0 LLM calls');
      expect(stdout).toMatch(/^1 +Paris 2025-06-01 +\S+, \d+% +NL +2 calls/m);
      expect(stdout).toMatch(/^11 +Paris 2025-06-02 +\S+, \d+% +PD\+LLM +4 calls/m);
      expect(stdout).toMatch(/^20 +Mumbai 2025-06-02 +\S+, \d+% +routines +0 calls, 0 tokens +0 calls, 0 tokens$/m);
      expect(stdout).toContain('Protocol negotiated at query 11, in 1 round,');
      expect(stdout).toContain('Routine approved after query 15: weather agent: Get weather');
      expect(stdout).toContain('Routine approved after query 15: assistant: get_weather');
      expect(stdout).toContain('All 21 answers match the hidden table.');
    },
  );

  it(
    'network: routed by the hub, the cost per query falls to zero as protocols are shared and routines appear, every answer right',
    { timeout: 300_000 },
    async () => {
      const { code, stdout, stderr } = await runExample('examples/network/main.ts', [
        '--queries',
        '120',
        '--window',
        '30',
      ]);
      expect(code, `${stdout}\n${stderr}`).toBe(0);
      // Only progress lines, on a query that took over 2 s (routines being written): no warning, no error.
      expect(stderr.split('\n').filter((line) => line && !/^ {2}… query \d+: \d+ s(, .+)?$/.test(line))).toEqual([]);
      expect(stdout).toMatch(/^1-30 +120 +\d+ +\d+ +0% +0%$/m);
      expect(stdout).toMatch(/^91-120 +0 +0 +0 +100% +100%$/m);
      expect(stdout).toMatch(
        /^Routed bob's rain_check \("will it rain: the weather in a city"\) to weather by keyword: keyword score [\d.]+: "weather" in name; "city" in description$/m,
      );
      expect(stdout).toContain(`alice's get_weather negotiated (and published to the hub) "Get weather" with weather`);
      expect(stdout).toContain(`carol's price_in found, and judged a fit, "Convert money" with currency`);
      expect(stdout).toContain(
        `The hub's protocol database: "Convert money" (served by currency), "Get weather" (served by weather), "Next train" (served by trains).`,
      );
      expect(stdout).toContain(`bob's rain_check found, and judged a fit, "Get weather" with weather`);
      expect(stdout).toMatch(/weather approved its routine for "Get weather"/);
      expect(stdout).toMatch(/carol approved its routine for price_in/);
      expect(stdout).toContain('All 120 answers match the hidden tables.');
    },
  );

  it(
    'room: three agents and a person in a moderated room, printed live, checking its own result',
    { timeout: 120_000 },
    async () => {
      const { code, stdout, stderr } = await runExample('examples/room/main.ts');
      expect(code, `${stdout}\n${stderr}`).toBe(0);
      expect(stdout).toMatch(/^ {7}ana: Please keep the public API as it is\.$/m);
      expect(stdout).toContain('checked: 8 turns, the lead between speakers, the person heard, the synthesis last');
    },
  );
});
