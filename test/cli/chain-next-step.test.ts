// What `agora chain` says to do when a chain stops: `agora resume` only where a second try can go further. A hop
// refused under a JSON protocol (a chain sends {"goal", "input"}, not the protocol's own body) fails the same way on
// every resume, so the line names the document and `agora send` instead.
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent.js';
import { unfinishedNextStep } from '../../src/cli/_chain-output.js';
import type { ChainRun, Hop } from '../../src/hub/records.js';
import { startHub } from '../../src/hub/server.js';
import { silentLogger } from '../../src/log.js';
import { runCli } from '../helpers/cli.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

const failed = (error: string, extra: Partial<Hop> = {}): Hop => ({
  agentId: 'a1',
  agentName: 'converter',
  url: 'http://127.0.0.1:4000',
  by: 'keyword',
  reason: 'best match',
  ok: false,
  error,
  startedAt: 1,
  finishedAt: 2,
  ...extra,
});
const run = (status: ChainRun['status'], hops: Hop[], error?: string) =>
  ({ id: 'c1', goal: 'convert 3 km to miles', status, hops, next: { goal: 'x' }, maxHops: 10, error }) as ChainRun;

describe('the next step after an unfinished chain', () => {
  it('names agora resume where a second try can go further: an agent down, the hop cap', () => {
    expect(unfinishedNextStep(run('failed', [failed('POST http://127.0.0.1:4000/: connection refused')]))).toBe(
      'continue it with: agora resume c1',
    );
    expect(unfinishedNextStep(run('capped', []))).toBe(
      'continue it with: agora resume c1 (--max-hops <n> allows more hops)',
    );
  });

  it('names the hub register step when no agent serves the goal', () => {
    const noAgent = run('failed', [], 'routing "convert" failed: No agent matches the goal: no word of it appears');
    expect(unfinishedNextStep(noAgent)).toMatch(
      /^no agent of the hub serves this goal: register one .* agora resume c1$/,
    );
  });

  it('names the document and agora send, not agora resume, when a hop under a protocol was refused', () => {
    const refused = failed(
      'POST http://127.0.0.1:4000/: the agent refused the query under "Unit conversion" (a protocol-level error)',
      {
        protocolHash: 'ab12',
      },
    );
    const step = unfinishedNextStep(run('failed', [refused]));
    expect(step).not.toContain('agora resume');
    expect(step).toContain('http://127.0.0.1:4000/protocols/ab12');
    expect(step).toContain("agora send http://127.0.0.1:4000 '<body>' --protocol <file>");
  });
});

describe('agora chain against an agent whose protocol takes JSON', { timeout: 60_000 }, () => {
  let dir: string;
  let agent: RunningAgent;
  let hub: Awaited<ReturnType<typeof startHub>>;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'agora-chain-json-'));
    for (const file of ['protocols/unit-conversion.md', 'routines/unit-conversion.ts', 'tools/convert-units.ts'])
      await cp(join(root, file), join(dir, file), { recursive: true });
    agent = await startAgent({
      dir,
      name: 'converter',
      port: 0,
      host: '127.0.0.1',
      llm: null,
      watch: false,
      logger: silentLogger,
      faces: false,
      dashboard: false,
    });
    hub = await startHub({ port: 0, tickMs: 0, allowPrivateAgents: true, logger: silentLogger });
    await hub.hub.register({ url: agent.url, name: 'converter' });
  });

  afterAll(async () => {
    await hub?.close();
    await agent?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('fails the hop and says to query the agent with the protocol, not to resume', async () => {
    const chain = await runCli(['chain', 'convert 3 km to miles', '--hub', hub.url, '--allow-private-agents']);
    expect(chain.code).toBe(1);
    expect(chain.stderr).toContain('(a protocol-level error)');
    expect(chain.stderr).not.toContain('agora resume');
    expect(chain.stderr).toMatch(/agora send http:\/\/127\.0\.0\.1:\d+ '<body>' --protocol <file>/);
    expect(chain.stderr).toMatch(/\/protocols\/[0-9a-f]{40}\)/);
  });
});
