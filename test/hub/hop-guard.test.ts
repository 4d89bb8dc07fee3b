import { afterEach, describe, expect, it } from 'vitest';
import { runChain, type ChainBackend } from '../../src/hub/chains.js';
import type { AgentRecord, ChainRun } from '../../src/hub/records.js';
import { startOapPlanner, type OapTestAgent } from '../helpers/oap-agent.js';

const agents: OapTestAgent[] = [];
afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.close();
});

async function planner(): Promise<OapTestAgent> {
  const agent = await startOapPlanner(() => ({ body: { status: 'completed', result: 'an itinerary' } }));
  agents.push(agent);
  return agent;
}

/** A directory that routes every goal to one agent, registered when its name still pointed somewhere public. */
function backendFor(url: string, kind: AgentRecord['kind'], allowsPrivateAgents?: boolean): ChainBackend {
  const runs = new Map<string, ChainRun>();
  const agent: AgentRecord = {
    id: 'a1',
    url,
    name: 'planner',
    description: 'Plans a trip itinerary.',
    kind,
    protocols: [],
    capabilities: ['itinerary planning'],
    status: 'up',
    missedChecks: 0,
    registeredAt: 0,
    lastSeen: 0,
    lastChecked: 0,
  };
  return {
    route: async () => ({ agent, by: 'keyword', reason: 'test', candidates: [] }),
    saveRun: async (run) => void runs.set(run.id, structuredClone(run)),
    getRun: async (id) => runs.get(id),
    ...(allowsPrivateAgents === undefined ? {} : { allowsPrivateAgents }),
  };
}

describe("a chain hop's address", () => {
  it('is checked at connect time: a registered name that now resolves to a private address is refused', async () => {
    const agent = await planner();
    const port = new URL(agent.url).port;
    const rebound = async () => [{ address: '127.0.0.1', family: 4 as const }];
    for (const kind of ['oap', 'agora'] as const) {
      const run = await runChain(backendFor(`http://agent.example:${port}`, kind), 'plan a trip', { lookup: rebound });
      expect(run.status).toBe('failed');
      expect(run.hops[0]!.error).toContain('agent.example resolves to 127.0.0.1, which is a loopback');
      expect(run.hops[0]!.error).toContain('allowPrivateAgents is off');
    }
    // No lookup injected: `localhost` resolves to loopback on every machine.
    const local = await runChain(backendFor(`http://localhost:${port}`, 'oap'), 'plan a trip');
    expect(local.hops[0]!.error).toMatch(/localhost resolves to (127\.0\.0\.1|::1), which is a loopback/);
    expect(agent.envelopes).toEqual([]);
  });

  it('may be private when the chain or its hub allows private agents', async () => {
    const agent = await planner();
    const url = agent.url.replace('127.0.0.1', 'localhost');
    const allowed = await runChain(backendFor(url, 'oap'), 'plan a trip', { allowPrivateAgents: true });
    expect(allowed.hops[0]).toMatchObject({ ok: true, result: 'an itinerary' });
    const byHub = await runChain(backendFor(url, 'oap', true), 'plan a trip');
    expect(byHub.hops[0]).toMatchObject({ ok: true });
    expect(agent.envelopes).toHaveLength(2);
  });
});
