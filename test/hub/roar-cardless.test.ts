// The hub and a ROAR agent without a card (roar_sdk's `create_roar_router`, emulated in test/helpers/roar-router.ts):
// recognised from `/roar/health`, known by the name, description and capabilities its registration gives, routed to
// and reached by chains like any ROAR agent.
import { afterEach, describe, expect, it } from 'vitest';
import { runChain } from '../../src/hub/chains.js';
import { HubClient } from '../../src/hub/client.js';
import { Hub } from '../../src/hub/hub.js';
import { startHub } from '../../src/hub/server.js';
import { silentLogger } from '../../src/log.js';
import { startRoarRouter } from '../helpers/roar-router.js';

// The agents here listen on loopback: the hops' address guard lets them through, as the hub's setting does.
const LOCAL = { allowPrivateAgents: true };

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function hub(): Promise<{ url: string; client: HubClient }> {
  const running = await startHub({ port: 0, allowPrivateAgents: true, tickMs: 0, logger: silentLogger });
  cleanups.push(running.close);
  return { url: running.url, client: new HubClient({ url: running.url }) };
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describe('the hub and a ROAR agent without a card', () => {
  it('registers it from /roar/health with the name, description and capabilities given, routes to it and chains through it', async () => {
    // The README's handler: a payload of its own fields, no `result`.
    const router = await startRoarRouter({
      name: 'reviewer',
      answer: (payload) => ({ status: 'ok', review: `LGTM: ${String(payload.task).split('\n')[0]}` }),
    });
    cleanups.push(router.close);
    const { client } = await hub();
    const record = await client.register(router.url, {
      name: 'py-reviewer',
      description: 'Reviews diffs, on the ROAR network.',
      capabilities: ['code-review', ' python ', 'python', ''],
    });
    expect(record).toMatchObject({
      name: 'py-reviewer',
      kind: 'roar',
      description: 'Reviews diffs, on the ROAR network.',
      capabilities: ['code-review', 'python'],
      protocols: [],
      status: 'up',
    });

    expect((await client.route('a python code-review of this diff')).agent.name).toBe('py-reviewer');
    const run = await runChain(client, 'a python code-review of this diff', LOCAL);
    expect(run.status).toBe('done');
    expect(run.hops.map((hop) => [hop.agentName, hop.ok, hop.result])).toEqual([
      ['py-reviewer', true, { status: 'ok', review: 'LGTM: a python code-review of this diff' }],
    ]);
    expect(router.received[0]).toMatchObject({
      intent: 'delegate',
      payload: { task: 'a python code-review of this diff' },
      to: expect.stringMatching(/^did:web:127\.0\.0\.1%3A\d+$/),
    });
  });

  it('keeps its kind, name and capabilities when it is checked again, and takes no name from it when none is given', async () => {
    const router = await startRoarRouter({ name: 'quiet', answer: () => ({ status: 'ok' }) });
    cleanups.push(router.close);
    const hub = new Hub({ allowPrivateAgents: true, now: () => 1_000_000 });
    cleanups.push(() => hub.close());
    const bare = await hub.register({ url: router.url });
    expect(bare).toMatchObject({ name: new URL(router.url).host, kind: 'roar', capabilities: [] });
    const named = await hub.register({ url: router.url, name: 'quiet', capabilities: ['listening'] });
    expect(await hub.directory.check(named.id)).toMatchObject({
      name: 'quiet',
      kind: 'roar',
      capabilities: ['listening'],
      status: 'up',
      missedChecks: 0,
    });
    // Registered again without capabilities: the ones given before stay (the agent lists none of its own).
    expect(await hub.register({ url: router.url })).toMatchObject({ name: 'quiet', capabilities: ['listening'] });
  });

  it("refuses capabilities that are not a list of short strings, and new capabilities without the first registrant's token", async () => {
    const router = await startRoarRouter({ name: 'guarded', answer: () => ({ status: 'ok' }) });
    cleanups.push(router.close);
    const { url } = await hub();
    expect((await post(`${url}/agents`, { url: router.url, capabilities: 'code-review' })).status).toBe(400);
    expect((await post(`${url}/agents`, { url: router.url, capabilities: ['x'.repeat(101)] })).status).toBe(400);
    expect(
      (
        await post(`${url}/agents`, {
          url: router.url,
          capabilities: Array.from({ length: 101 }, (_, index) => `c${index}`),
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await post(
          `${url}/agents`,
          { url: router.url, name: 'guarded', capabilities: ['review'] },
          { authorization: 'Bearer owner-key' },
        )
      ).status,
    ).toBe(201);
    const stranger = await post(
      `${url}/agents`,
      { url: router.url, capabilities: ['payments'] },
      { authorization: 'Bearer stranger' },
    );
    expect(stranger.status).toBe(409);
    expect(await stranger.text()).toMatch(/only that token may change its name, description or capabilities/);
    const owner = await post(
      `${url}/agents`,
      { url: router.url, capabilities: ['review', 'audit'] },
      { authorization: 'Bearer owner-key' },
    );
    expect(await owner.json()).toMatchObject({ name: 'guarded', capabilities: ['review', 'audit'] });
  });
});
