import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { movingAverage } from '../../examples/paper-network/figure.js';
import { runNode, type RunResult } from '../helpers/cli.js';

/** Runs a script of the example as its users would (tsx resolves `agora-agents` to src/), offline. */
function run(args: string[]): Promise<RunResult> {
  return runNode(['--import', 'tsx', ...args], { timeoutMs: 600_000 });
}

describe('the paper network', () => {
  it('averages over a moving window, over fewer points at the start', () => {
    expect(movingAverage([4, 2, 0, 0, 6], 2)).toEqual([4, 3, 1, 0, 3]);
  });

  it('draws the same script and hidden tables from the same seed, others from another seed', async () => {
    const code = `
      import { expected, script } from './examples/paper-network/scenario.ts';
      const shape = { users: 85, services: 15, actions: 1000 };
      const plain = (seed) => script({ seed, ...shape }).actions.map((action) =>
        [action.user, action.task.spec.name, action.service.name, action.input, expected(action, seed)]);
      const one = JSON.stringify(plain(7));
      const world = script({ seed: 7, ...shape });
      console.log(JSON.stringify({
        same: one === JSON.stringify(plain(7)),
        other: one !== JSON.stringify(plain(8)),
        tasks: new Set(world.actions.map((action) => action.task.spec.name)).size,
        users: new Set(world.actions.map((action) => action.user)).size,
      }));`;
    const { code: exit, stdout, stderr } = await run(['--input-type=module', '-e', code]);
    expect(exit, stderr).toBe(0);
    const facts = JSON.parse(stdout) as { same: boolean; other: boolean; tasks: number; users: number };
    expect(facts).toMatchObject({ same: true, other: true });
    expect(facts.tasks).toBeGreaterThanOrEqual(10);
    expect(facts.users).toBeGreaterThan(60);
  });

  it(
    'plays 100 actions on 7 users, 3 services and 3 hubs twice: every answer right, every path, Agora cheaper',
    { timeout: 300_000 },
    async () => {
      const out = await mkdtemp(join(tmpdir(), 'agora-paper-test-'));
      try {
        const args = ['--users', '7', '--services', '3', '--actions', '100', '--window', '20', '--tail', '100'];
        args.push('--out', out);
        const { code, stdout, stderr } = await run(['examples/paper-network/main.ts', ...args]);
        expect(code, `${stdout}\n${stderr}`).toBe(0);
        expect(stdout).toContain("The paper's network: seed 43, 7 users, 3 services, 100 actions.");
        expect(stdout).toContain('all 200 right');
        const table = await readFile(join(out, 'table.md'), 'utf8');
        const row = (label: string) =>
          table
            .split('\n')
            .find((line) => line.startsWith(`| ${label} |`))!
            .split('|')
            .map((cell) => cell.trim())
            .slice(2, 6)
            .map(Number);
        expect(row('natural language only')).toEqual([100, 0, 0, 0]);
        // Natural language, negotiation, protocol with an LLM, protocol with routines on both sides: all taken.
        for (const count of row('Agora')) expect(count).toBeGreaterThan(0);
        // Each hub holds every protocol negotiated through any of them: the catalogues synchronised.
        const catalogues = /catalogues at the end \(after a last sync\): (\d+), (\d+), (\d+)/.exec(table)!.slice(1);
        expect(Number(catalogues[0])).toBeGreaterThan(0);
        expect(new Set(catalogues).size).toBe(1);
        // Both runs reported every action to the first hub, whose dashboard draws them.
        expect(table).toContain(
          "reported to the first hub's dashboard: natural-language-only 100 queries, agora 100 queries",
        );
        // The breakdown of the last actions by path covers them all, and its shares add up.
        const breakdown = table.split("Where the Agora run's last 100 actions spent")[1]!.split('\n\n')[1]!;
        const rows = breakdown
          .split('\n')
          .slice(2)
          .map((line) => line.split('|').map((cell) => cell.trim()));
        expect(rows.map((cells) => cells[1])).toEqual([
          'natural language',
          'negotiation',
          'protocol with LLM',
          'protocol with routines',
          'wrote a routine',
        ]);
        expect(rows.reduce((sum, cells) => sum + Number(cells[2]), 0)).toBe(100);
        const shares = rows.map((cells) => (cells[7] === '—' ? 0 : Number(cells[7]!.replace('%', ''))));
        expect(shares.reduce((sum, share) => sum + share, 0)).toBeCloseTo(100, 0);
        const steady = Number(/\*\*([\d.]+)×\*\* cheaper with Agora/.exec(table)![1]);
        expect(steady).toBeGreaterThan(2);
        const svg = await readFile(join(out, 'cost-per-query.svg'), 'utf8');
        expect(svg.match(/<path /g)).toHaveLength(2);
      } finally {
        await rm(out, { recursive: true, force: true });
      }
    },
  );
});
