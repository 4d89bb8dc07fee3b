import { get } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createHubDashboard } from '../../src/dashboard/hub-dashboard.js';
import { startHub } from '../../src/hub/server.js';
import { silentLogger } from '../../src/log.js';
import { startLoopbackAgent } from '../hub/_agents.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('hub dashboard', () => {
  it('lists agents up or down with their protocols and the catalogue, pushes changes on its feed, and says when rooms are absent', async () => {
    const running = await startHub({
      port: 0,
      tickMs: 0,
      allowPrivateAgents: true,
      logger: silentLogger,
      rooms: false,
      mounts: (hub) => [createHubDashboard(hub, { checkMs: 20 })],
    });
    cleanups.push(() => running.close());
    const base = `${running.url}/dashboard/`;
    const page = await fetch(base);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await page.text()).toContain('<script src="assets/hub.js" defer></script>');

    // node:http, not fetch: destroying the request closes its socket at once, so the hub closes without waiting.
    const chunks: string[] = [];
    let arrived: () => void = () => {};
    const feed = get(`${base}events`, (response) => {
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        chunks.push(chunk);
        arrived();
      });
    });
    const more = () => new Promise<void>((resolve) => (arrived = resolve));
    const states = () =>
      [...chunks.join('').matchAll(/event: state\ndata: (.*)\n\n/g)].map(
        (match) =>
          JSON.parse(match[1]!) as {
            agents: { name: string; status: string; protocols: { name: string }[] }[];
            rooms: unknown;
          },
      );
    while (states().length < 1) await more();
    expect(states()[0]).toMatchObject({ agents: [], catalogue: [], chains: [], rooms: null });

    const agent = await startLoopbackAgent(
      { 'Weather forecast': 'Gives the weather forecast for a city.' },
      () => 'sunny',
    );
    cleanups.push(agent.close);
    await running.hub.register({ url: agent.url, name: 'meteo' });
    // Pushed by the hub once its state changed: no request from the page.
    while (states().length < 2) await more();
    expect(states()[1]!.agents).toMatchObject([
      { name: 'meteo', status: 'up', protocols: [{ name: 'Weather forecast' }] },
    ]);
    feed.destroy();

    const state = (await (await fetch(`${base}api/state`)).json()) as {
      catalogue: { name: string; servedBy: string[] }[];
    };
    expect(state.catalogue).toMatchObject([{ name: 'Weather forecast', servedBy: ['meteo'] }]);
  });

  it('is off beyond loopback without a token, and needs the token for data when one is set', async () => {
    const running = await startHub({
      port: 0,
      tickMs: 0,
      tokens: ['hub-token'],
      logger: silentLogger,
      mounts: (hub) => [createHubDashboard(hub, { tokens: ['hub-token'] })],
    });
    cleanups.push(() => running.close());
    expect((await fetch(`${running.url}/dashboard/`)).status).toBe(200);
    expect((await fetch(`${running.url}/dashboard/api/state`)).status).toBe(401);
    expect(
      (await fetch(`${running.url}/dashboard/api/state`, { headers: { authorization: 'Bearer hub-token' } })).status,
    ).toBe(200);
  });
});
