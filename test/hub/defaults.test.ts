import { describe, expect, it } from 'vitest';
import { HUB_DEFAULTS, hubLimits } from '../../src/hub/defaults.js';
import { Hub } from '../../src/hub/hub.js';

describe('a hub configuration', () => {
  it('takes every limit left out from HUB_DEFAULTS', () => {
    const limits = hubLimits({ maxAgents: 5, maxRuns: undefined });
    expect(limits.maxAgents).toBe(5);
    expect(limits.maxRuns).toBe(HUB_DEFAULTS.maxRuns);
    expect(limits.removeDownAfterMs).toBe(7 * 24 * 60 * 60 * 1000);
  });

  it('refuses maxRuns 0 and a negative maxAgents, naming them, rather than falling back to the default', () => {
    expect(() => new Hub({ maxRuns: 0 })).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message: 'Hub option maxRuns must be a positive integer, not 0',
      }),
    );
    expect(() => new Hub({ maxAgents: -1 })).toThrow(/maxAgents must be 0 or a positive integer, not -1/);
    expect(hubLimits({ maxAgents: 0 }).maxAgents).toBe(0);
  });

  it('refuses a limit that is not a whole number, and a check interval of 0 ms', () => {
    expect(() => hubLimits({ maxRunBytes: 1.5 })).toThrow(/maxRunBytes must be a positive integer/);
    expect(() => hubLimits({ maxDocuments: -1 })).toThrow(/maxDocuments must be a positive integer/);
    expect(() => hubLimits({ checkIntervalMs: 0 })).toThrow(/checkIntervalMs must be over 0 ms/);
  });

  it('accepts removing a down agent at once (0 ms)', () => {
    expect(hubLimits({ removeDownAfterMs: 0 }).removeDownAfterMs).toBe(0);
  });
});
