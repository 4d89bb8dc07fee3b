import { afterEach, expect, it } from 'vitest';
import { Hub } from '../../src/hub/hub.js';
import { document, startFakeAgent } from './_agents.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

it('honours maxAgents: 0 (no agent is held), rather than taking it for the default', async () => {
  const hub = new Hub({ allowPrivateAgents: true, maxAgents: 0 });
  const agent = await startFakeAgent(document('One', 'First.'));
  cleanups.push(() => hub.close(), agent.close);
  await expect(hub.register({ url: agent.url })).rejects.toThrow('The directory is full (0 agents)');
  expect(await hub.agents()).toEqual([]);
});
