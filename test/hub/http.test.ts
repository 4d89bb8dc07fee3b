// The hub's HTTP mount goes through the `Hub` facade: a chain's lease holds for a DELETE as it does for a PUT.
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { startHub, type RunningHub } from '../../src/hub/server.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function hub(): Promise<RunningHub> {
  const running = await startHub({ port: 0, tickMs: 0, logger: silentLogger, rooms: false });
  closers.push(() => running.close());
  return running;
}

/** A running chain's checkpoint, held by `owner`. */
function checkpoint(id: string, owner: string) {
  return {
    id,
    goal: 'g',
    status: 'running',
    hops: [],
    next: { goal: 'g' },
    owner,
    leaseUntil: 0,
    createdAt: 1,
    updatedAt: 2,
    maxHops: 10,
  };
}

function put(url: string, id: string, owner: string, force = false): Promise<Response> {
  return fetch(`${url}/runs/${id}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ run: checkpoint(id, owner), leaseMs: 60_000, force }),
  });
}

describe('chain checkpoints over HTTP', () => {
  it('refuses a DELETE by a caller that does not hold the lease, as it refuses a PUT', async () => {
    const { url } = await hub();
    expect((await put(url, 'held', 'first')).status).toBe(200);

    const refusedPut = await put(url, 'held', 'second');
    const refusedDelete = await fetch(`${url}/runs/held?owner=second`, { method: 'DELETE' });
    const anonymousDelete = await fetch(`${url}/runs/held`, { method: 'DELETE' });
    for (const refused of [refusedPut, refusedDelete, anonymousDelete]) {
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: string }).error).toMatch(
        /^Chain held is held by another process \(first\); /,
      );
    }
    expect((await fetch(`${url}/runs/held`)).status).toBe(200);
  });

  it('lets the holder delete its chain, and anyone force it', async () => {
    const { url } = await hub();
    expect((await put(url, 'mine', 'first')).status).toBe(200);
    expect((await fetch(`${url}/runs/mine?owner=first`, { method: 'DELETE' })).status).toBe(200);
    expect((await fetch(`${url}/runs/mine`)).status).toBe(404);

    expect((await put(url, 'taken', 'first')).status).toBe(200);
    expect((await fetch(`${url}/runs/taken?force=true`, { method: 'DELETE' })).status).toBe(200);
    expect((await fetch(`${url}/runs/taken`)).status).toBe(404);
  });

  it('deletes a finished chain for anyone: its lease was given up', async () => {
    const { url } = await hub();
    const response = await fetch(`${url}/runs/done`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ run: { ...checkpoint('done', 'first'), status: 'done', next: null } }),
    });
    expect(response.status).toBe(200);
    expect((await fetch(`${url}/runs/done`, { method: 'DELETE' })).status).toBe(200);
    expect((await fetch(`${url}/runs/done`)).status).toBe(404);
  });
});
