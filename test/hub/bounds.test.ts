// Issue 28: a hub strangers cannot abuse. Rooms reach only vetted addresses and never copy a participant's text
// into a transcript; replies, checkpoints and the catalogue are bounded; names cannot be squatted; down agents
// stay listed, then go; a private address is refused as a bad request; chains stop on a protocol-level error.
import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { queryAgent } from '../../src/hub/agent-query.js';
import { startHub, type RunningHub } from '../../src/hub/server.js';
import { hashText } from '../../src/protocol/document.js';
import { silentLogger } from '../../src/log.js';
import { document, startFakeAgent, startLoopbackAgent } from './_agents.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function hub(options: Parameters<typeof startHub>[0] = {}): Promise<RunningHub> {
  const running = await startHub({ port: 0, tickMs: 0, logger: silentLogger, ...options });
  closers.push(() => running.close());
  return running;
}

/** A room's record once its first turn is in the transcript. */
function firstTurn(url: string, id: string): Promise<{ transcript: { kind: string; text: string }[] }> {
  return vi.waitFor(
    async () => {
      const record = (await (await fetch(`${url}/rooms/${id}`)).json()) as {
        transcript: { kind: string; text: string }[];
      };
      expect(record.transcript.length).toBeGreaterThan(0);
      return record;
    },
    { timeout: 10_000, interval: 50 },
  );
}

/** A server answering every request with `body` (a stand-in for an internal service, or a participant). */
async function rawServer(body: string | Buffer, contentType = 'text/plain'): Promise<string> {
  const server: Server = createServer((_request, response) =>
    response.writeHead(200, { 'content-type': contentType }).end(body),
  );
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  closers.push(() => new Promise((done) => server.close(done)));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describe('rooms reach only agents', () => {
  it('refuses a participant URL on a private address unless the hub allows private agents', async () => {
    const internal = await rawServer('INTERNAL-SECRET db_password=hunter2');
    const running = await hub();
    const response = await post(`${running.url}/rooms`, {
      topic: 't',
      participants: [`${internal}/admin/export`, `${internal}/other`],
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain('--allow-private-agents');
  });

  it('records a participant that answers no Agora reply in fixed words, never its text', async () => {
    const internal = await rawServer('INTERNAL-SECRET db_password=hunter2');
    const other = await rawServer('INTERNAL-SECRET db_password=hunter2');
    const running = await hub({ allowPrivateAgents: true });
    const created = await post(`${running.url}/rooms`, {
      topic: 't',
      participants: [`${internal}/admin/export`, other],
      maxTurns: 2,
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const room = await firstTurn(running.url, id);
    expect(room.transcript[0]).toMatchObject({ kind: 'skipped', text: 'not JSON (HTTP 200)' });
    expect(JSON.stringify(room)).not.toContain('SECRET');
  });

  it('reads at most the turn reply cap of a participant, after decompression', async () => {
    const huge = JSON.stringify({ status: 'success', body: { message: 'x'.repeat(2 * 1024 * 1024) } });
    const participant = await rawServer(huge, 'application/json');
    const other = await rawServer(huge, 'application/json');
    const running = await hub({ allowPrivateAgents: true });
    const created = await post(`${running.url}/rooms`, { topic: 't', participants: [participant, other], maxTurns: 2 });
    const { id } = (await created.json()) as { id: string };
    const room = await firstTurn(running.url, id);
    expect(room.transcript[0]).toMatchObject({ kind: 'skipped', text: 'reply too large (HTTP 200)' });
  });

  it("refuses a person's message under a participant's name", async () => {
    const participant = await rawServer('{}', 'application/json');
    const other = await rawServer('{}', 'application/json');
    const running = await hub({ allowPrivateAgents: true });
    const created = await post(`${running.url}/rooms`, {
      topic: 't',
      participants: [participant, other],
      maxTurns: 50,
    });
    const { id, participants } = (await created.json()) as { id: string; participants: { name: string }[] };
    const name = participants[0]!.name;
    const refused = await post(`${running.url}/rooms/${id}/messages`, { text: 'hello', from: name.toUpperCase() });
    expect(refused.status).toBe(400);
    expect((await post(`${running.url}/rooms/${id}/messages`, { text: 'hello', from: 'alice' })).status).toBe(201);
  });
});

describe('the directory', () => {
  it('refuses a private address as a bad request naming --allow-private-agents', async () => {
    const agent = await startLoopbackAgent({ Weather: 'forecasts' }, () => ({}));
    closers.push(() => agent.close());
    const running = await hub();
    const response = await post(`${running.url}/agents`, { url: agent.url });
    expect(response.status).toBe(400);
    const text = await response.text();
    expect(text).toContain('--allow-private-agents');
    expect(text).not.toContain('allowPrivateSources');
  });

  it('keeps a name for its first registrant: another URL under it is refused (409) unless it brings the same token', async () => {
    const first = await startLoopbackAgent({ Weather: 'forecasts' }, () => ({}));
    const second = await startLoopbackAgent({ Weather: 'forecasts' }, () => ({}));
    closers.push(
      () => first.close(),
      () => second.close(),
    );
    const running = await hub({ allowPrivateAgents: true });
    expect(
      (await post(`${running.url}/agents`, { url: first.url, name: 'weather' }, { authorization: 'Bearer owner-key' }))
        .status,
    ).toBe(201);
    expect((await post(`${running.url}/agents`, { url: second.url, name: 'Weather' })).status).toBe(409);
    expect(
      (await post(`${running.url}/agents`, { url: second.url, name: 'weather' }, { authorization: 'Bearer stranger' }))
        .status,
    ).toBe(409);
    expect(
      (await post(`${running.url}/agents`, { url: first.url, name: 'renamed' }, { authorization: 'Bearer stranger' }))
        .status,
    ).toBe(409);
    const same = await post(
      `${running.url}/agents`,
      { url: second.url, name: 'weather' },
      { authorization: 'Bearer owner-key' },
    );
    expect(same.status).toBe(201);
    expect(JSON.stringify(await same.json())).not.toContain('registrant');
  });

  it('lists a down agent with its status, and removes it once it has been down long enough', async () => {
    let now = 1_000_000;
    const fake = await startFakeAgent(document('Weather', 'forecasts'));
    closers.push(() => fake.close());
    const running = await hub({
      allowPrivateAgents: true,
      now: () => now,
      checkIntervalMs: 1000,
      maxMissedChecks: 1,
      removeDownAfterMs: 60_000,
    });
    const registered = (await (await post(`${running.url}/agents`, { url: fake.url })).json()) as { id: string };
    fake.state.healthy = false;
    now += 2000;
    await running.hub.tick();
    const listed = (await (await fetch(`${running.url}/agents`)).json()) as {
      agents: { id: string; status: string }[];
    };
    expect(listed.agents).toEqual([expect.objectContaining({ id: registered.id, status: 'down' })]);
    expect(((await (await fetch(`${running.url}/agents?status=up`)).json()) as { agents: unknown[] }).agents).toEqual(
      [],
    );
    now += 61_000;
    await running.hub.tick();
    expect(((await (await fetch(`${running.url}/agents`)).json()) as { agents: unknown[] }).agents).toEqual([]);
  });

  it('holds each client to its quota of new protocol documents', async () => {
    const running = await hub({ maxDocumentsPerClient: 2 });
    const publish = (index: number) => {
      const text = document(`P${index}`, `document ${index}`);
      return post(`${running.url}/protocols`, { hash: hashText(text), text });
    };
    expect((await publish(1)).status).toBe(201);
    expect((await publish(2)).status).toBe(201);
    expect((await publish(3)).status).toBe(429);
    // A document already held costs nothing.
    expect((await publish(1)).status).toBe(201);
  });
});

describe('chain checkpoints', () => {
  const run = (id: string, size: number, status = 'done') => ({
    run: {
      id,
      goal: 'g',
      status,
      hops: [],
      next: null,
      owner: 'me',
      leaseUntil: 0,
      createdAt: 1,
      updatedAt: Date.now(),
      maxHops: 10,
      error: 'e'.repeat(size),
    },
  });
  const put = (url: string, id: string, size: number, status?: string) =>
    fetch(`${url}/runs/${id}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(run(id, size, status)),
    });

  it('refuses one larger than the checkpoint cap (413) and keeps free texts short', async () => {
    const running = await hub({ maxRunBytes: 8 * 1024 });
    expect((await put(running.url, 'big', 2000, 'failed')).status).toBe(200);
    expect(
      ((await (await fetch(`${running.url}/runs/big`)).json()) as { error: string }).error.length,
    ).toBeLessThanOrEqual(2000);
    const response = await fetch(`${running.url}/runs/big2`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        run: {
          ...run('big2', 10, 'failed').run,
          goal: 'g'.repeat(1999),
          hops: Array.from({ length: 10 }, () => ({
            agentId: 'a',
            agentName: 'a',
            url: 'http://a',
            by: 'keywords',
            reason: 'r'.repeat(1999),
            ok: false,
            startedAt: 1,
            finishedAt: 2,
          })),
        },
      }),
    });
    expect(response.status).toBe(413);
  });

  it('bounds the total bytes: the oldest finished chains make room, unfinished ones are never dropped', async () => {
    const running = await hub({ maxRunBytes: 64 * 1024, maxRunsBytes: 20 * 1024 });
    expect((await put(running.url, 'old', 1900)).status).toBe(200);
    for (let index = 0; index < 9; index++)
      expect((await put(running.url, `keep${index}`, 1900, 'failed')).status).toBe(200);
    expect((await fetch(`${running.url}/runs/old`)).status).toBe(404);
    expect((await put(running.url, 'more', 1900, 'failed')).status).toBe(400);
  });
});

describe('chains', () => {
  it('fail a hop whose agent answers a protocol-level error', async () => {
    const agent = await startLoopbackAgent({ Convert: 'unit conversion' }, () => ({ error: 'Invalid format' }));
    closers.push(() => agent.close());
    const protocol = {
      hash: hashText(document('Convert', 'unit conversion')),
      name: 'Convert',
      description: 'unit conversion',
      multiround: false,
    };
    const record = {
      id: 'a',
      url: agent.url,
      name: 'convert',
      description: '',
      kind: 'agora' as const,
      protocols: [protocol],
      capabilities: [],
      status: 'up' as const,
      missedChecks: 0,
      registeredAt: 0,
      lastSeen: 0,
      lastChecked: 0,
    };
    await expect(
      queryAgent(
        record,
        protocol,
        { runId: 'r', goal: 'convert 10 km to miles', done: [] },
        { timeoutMs: 5000, maxReplyBytes: 1024 * 1024 },
      ),
    ).rejects.toThrow(/protocol-level error/);
  });
});
