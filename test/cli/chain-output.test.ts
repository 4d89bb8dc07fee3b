import { afterEach, describe, expect, it, vi } from 'vitest';
import { printOutcome } from '../../src/cli/_chain-output.js';
import type { ChainRun, Hop } from '../../src/hub/records.js';

const hop = (agentName: string, ok: boolean): Hop => ({
  agentId: agentName,
  agentName,
  url: `http://${agentName}`,
  by: 'keyword',
  reason: 'best match',
  ok,
  startedAt: 1,
  finishedAt: 2,
  ...(ok ? { result: `${agentName} done` } : { error: 'timed out' }),
});

afterEach(() => vi.restoreAllMocks());

describe('agora chain and resume output', () => {
  it('counts the hops that ran after a resume, the failed attempt apart', () => {
    let stderr = '';
    let stdout = '';
    vi.spyOn(process.stderr, 'write').mockImplementation(
      (chunk: string | Uint8Array) => ((stderr += String(chunk)), true),
    );
    vi.spyOn(process.stdout, 'write').mockImplementation(
      (chunk: string | Uint8Array) => ((stdout += String(chunk)), true),
    );
    const run = {
      id: 'c1',
      goal: 'research then summarise',
      status: 'done',
      hops: [hop('researcher', true), hop('summariser', false), hop('summariser', true)],
      next: null,
      maxHops: 10,
      createdAt: 1,
      updatedAt: 2,
      owner: 'x',
    } as unknown as ChainRun;
    expect(printOutcome(run, false)).toBe(0);
    expect(stderr).toBe('chain c1: done, 2 hops: researcher → summariser (1 failed attempt)\n');
    expect(stdout).toBe('summariser done\n');
  });
});
