// One guard in front of every surface of a hub: a web page of another site cannot act on the hub API, the rooms or
// the dashboard (a text/plain POST needs no preflight), and the hub's rate limit covers rooms, the dashboard and the
// room sockets as well as its API.
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createHubDashboard, roomsSource } from '../../src/dashboard/hub-dashboard.js';
import { startHub, type RunningHub, type StartHubOptions } from '../../src/hub/server.js';
import { silentLogger } from '../../src/log.js';
import { startLoopbackAgent } from './_agents.js';
import { startSilentParticipant } from './rooms/_agents.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function hubWithDashboard(options: StartHubOptions = {}): Promise<RunningHub> {
  const running = await startHub({
    port: 0,
    tickMs: 0,
    allowPrivateAgents: true,
    logger: silentLogger,
    mounts: (hub, rooms) => [createHubDashboard(hub, { ...(rooms ? { rooms: roomsSource(rooms) } : {}) })],
    ...options,
  });
  cleanups.push(() => running.close());
  return running;
}

const EVIL = { origin: 'http://evil.example', 'content-type': 'text/plain' };
const PLAIN = { 'content-type': 'text/plain' };

async function post(
  url: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ status: number; json: any }> {
  const response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  return { status: response.status, json: await response.json() };
}

describe('cross-site requests to a hub', () => {
  it('refuses a text/plain POST with a foreign Origin to the API, the rooms and the dashboard; without Origin each still works', async () => {
    const running = await hubWithDashboard();
    const agent = await startLoopbackAgent({ Weather: 'Gives the weather.' }, () => 'sunny');
    const silent = await startSilentParticipant();
    cleanups.push(agent.close, silent.close);
    const refused = { status: 403, json: { status: 'failure', error: 'Cross-site request refused' } };

    expect(await post(`${running.url}/agents`, { url: agent.url }, EVIL)).toEqual(refused);
    expect(await post(`${running.url}/sync`, {}, EVIL)).toEqual(refused);
    expect(await running.hub.agents({ includeDown: true })).toEqual([]);
    expect((await post(`${running.url}/agents`, { url: agent.url }, PLAIN)).status).toBe(201);
    expect(await post(`${running.url}/sync`, {}, PLAIN)).toEqual({ status: 200, json: { reports: [] } });

    const room = { topic: 'held open', participants: [silent.url, agent.url], turnTimeoutMs: 120_000 };
    expect(await post(`${running.url}/rooms`, room, EVIL)).toEqual(refused);
    expect(await running.rooms!.open()).toEqual([]);
    const created = await post(`${running.url}/rooms`, room, PLAIN);
    expect(created.status).toBe(201);
    const control = `${running.url}/rooms/${created.json.id as string}/control`;
    expect(await post(control, { action: 'cancel' }, EVIL)).toEqual(refused);
    expect((await running.rooms!.get(created.json.id as string))?.state).toBe('active');
    expect(await post(control, { action: 'cancel' }, PLAIN)).toMatchObject({
      status: 200,
      json: { state: 'cancelled' },
    });

    // The hub dashboard is read-only: the same POST without Origin reaches it and is answered 405 there.
    expect(await post(`${running.url}/dashboard/api/state`, {}, EVIL)).toEqual(refused);
    expect(await post(`${running.url}/dashboard/api/state`, {}, PLAIN)).toEqual({
      status: 405,
      json: { status: 'failure', error: 'Method not allowed' },
    });
  });

  it('lets an origin the operator allowed (corsOrigins) make the same request', async () => {
    const running = await hubWithDashboard({ corsOrigins: ['http://evil.example'] });
    const response = await fetch(`${running.url}/sync`, { method: 'POST', headers: EVIL, body: '{}' });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe('http://evil.example');
  });
});

describe("the hub's rate limit", () => {
  it('covers the rooms, the dashboard and room socket upgrades, not only the API', async () => {
    const running = await hubWithDashboard({ rateLimit: { windowMs: 60_000, max: 3 } });
    for (let index = 0; index < 3; index++) expect((await fetch(`${running.url}/health`)).status).toBe(200);
    for (const path of ['/rooms/some-room', '/dashboard/', '/dashboard/api/state']) {
      const response = await fetch(`${running.url}${path}`);
      expect([path, response.status, Number(response.headers.get('retry-after')) > 0]).toEqual([path, 429, true]);
    }
    expect((await post(`${running.url}/rooms`, { topic: 'x', participants: ['a', 'b'] }, PLAIN)).status).toBe(429);
    const status = await new Promise<number>((resolve) =>
      new WebSocket(`${running.url.replace('http', 'ws')}/rooms/some-room/ws`).once(
        'unexpected-response',
        (_request, response) => resolve(response.statusCode ?? 0),
      ),
    );
    expect(status).toBe(429);
  });

  it("counts each message on a room's socket: past the limit the socket is closed", async () => {
    const running = await hubWithDashboard({ rateLimit: { windowMs: 60_000, max: 4 } });
    const [first, second] = [await startSilentParticipant(), await startSilentParticipant()];
    cleanups.push(first.close, second.close);
    const created = await post(
      `${running.url}/rooms`,
      { topic: 'sockets', participants: [first.url, second.url], turnTimeoutMs: 120_000 },
      PLAIN,
    );
    expect(created.status).toBe(201);
    const socket = new WebSocket(`${running.url.replace('http', 'ws')}/rooms/${created.json.id as string}/ws`);
    const acks: unknown[] = [];
    const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data)) as { type: string };
      if (frame.type === 'hello')
        for (let index = 0; index < 5; index++) socket.send(JSON.stringify({ type: 'heartbeat' }));
      if (frame.type === 'heartbeat_ack') acks.push(frame);
    });
    // Two requests spent (the room, the upgrade): two heartbeats answered, the third closes the socket.
    expect(await closed).toBe(1008);
    expect(acks).toHaveLength(2);
  });
});
