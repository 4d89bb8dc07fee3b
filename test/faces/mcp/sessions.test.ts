// MCP sessions a stranger opens and abandons are bounded: counted, swept from the memory once expired, and an
// `initialize` past the cap is refused until the sweep makes room.
import { describe, expect, it } from 'vitest';
import { McpSessions } from '../../../src/faces/mcp/sessions.js';
import { InMemoryMemory } from '../../../src/memory/file.js';

describe('MCP sessions', () => {
  it('refuses a session past the cap, and makes room by sweeping abandoned ones from the memory', async () => {
    const memory = new InMemoryMemory();
    let now = 1_000_000;
    const sessions = new McpSessions(memory, { idleMs: 60_000, maxSessions: 3, sweepEveryMs: 10_000, now: () => now });
    for (let index = 0; index < 3; index++) {
      expect(await sessions.hasRoom()).toBe(true);
      await sessions.open();
    }
    expect(await sessions.hasRoom()).toBe(false);
    expect(await memory.keys('mcp/sessions/')).toHaveLength(3);

    // Abandoned: past their idle time, nobody touched them again. The next initialize sweeps them.
    now += 61_000;
    expect(await sessions.hasRoom()).toBe(true);
    expect(await memory.keys('mcp/sessions/')).toEqual([]);
  });

  it('counts sessions left in the memory by an earlier run, and frees a slot when a session is ended', async () => {
    const memory = new InMemoryMemory();
    let now = 5_000_000;
    const earlier = new McpSessions(memory, { idleMs: 60_000, now: () => now });
    const kept = await earlier.open();
    await earlier.open();
    const sessions = new McpSessions(memory, { idleMs: 60_000, maxSessions: 2, now: () => now });
    expect(await sessions.hasRoom()).toBe(false);
    const receiver = { end: async () => {} } as unknown as Parameters<McpSessions['close']>[1];
    expect(await sessions.close(kept, receiver)).toBe(true);
    expect(await sessions.hasRoom()).toBe(true);
    now += 1;
    expect(await sessions.has(kept)).toBe(false);
  });
});
