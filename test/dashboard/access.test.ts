import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent } from '../../src/agent.js';
import { DashboardAccess, NEEDS_TOKEN, REVIEW_NEEDS_TOKEN } from '../../src/dashboard/access.js';
import type { EdgeRequest } from '../../src/edge/request.js';
import { agoraRouter } from '../../src/express.js';
import { silentLogger } from '../../src/log.js';
import { Receiver } from '../../src/receiver.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';

const DOUBLE =
  '---\nname: Double\ndescription: Double a number.\nmultiround: true\n---\n\nThe sender sends JSON {"n": number}; the receiver replies {"doubled": number}.\n';
const ROUTINE = 'export default { async handle(body) { return { doubled: body.n * 2 }; } };\n';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function agentWith(tokens?: string[]) {
  const folder = await makeAgentFolder({ 'protocols/double.md': DOUBLE, 'routines/double.ts': ROUTINE });
  const agent = await startAgent({
    dir: folder.dir,
    port: 0,
    host: '127.0.0.1',
    llm: null,
    watch: false,
    logger: silentLogger,
    faces: false,
    ...(tokens ? { tokens } : {}),
  });
  cleanups.push(async () => {
    await agent.close();
    await folder.cleanup();
  });
  return agent;
}

/** A request as the access rules see it: the address its server is bound to, and its headers. */
function requestOn(bound: string, authorization?: string, host = '127.0.0.1:3000'): EdgeRequest {
  return {
    method: 'GET',
    path: '/dashboard/',
    body: undefined,
    boundAddress: bound,
    headers: { host, ...(authorization ? { authorization } : {}) },
  };
}

describe('dashboard token rules', () => {
  it('without a token: read-only on loopback, off beyond it', () => {
    const access = new DashboardAccess([]);
    for (const bound of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) {
      expect(access.check(requestOn(bound), 'page')).toBeUndefined();
      expect(access.check(requestOn(bound), 'read')).toBeUndefined();
      expect(access.check(requestOn(bound), 'write')).toEqual({ status: 403, message: REVIEW_NEEDS_TOKEN });
    }
    for (const bound of ['0.0.0.0', '::', '192.168.1.4']) {
      for (const kind of ['page', 'read', 'write'] as const)
        expect(access.check(requestOn(bound), kind)).toEqual({ status: 403, message: NEEDS_TOKEN });
    }
  });

  it('with a token: the page (sign-in form) is open, data and actions need the bearer token, anywhere', () => {
    const access = new DashboardAccess(['s3cret']);
    for (const bound of ['127.0.0.1', '0.0.0.0']) {
      expect(access.check(requestOn(bound), 'page')).toBeUndefined();
      expect(access.check(requestOn(bound), 'read')?.status).toBe(401);
      expect(access.check(requestOn(bound, 'Bearer nope'), 'write')?.status).toBe(401);
      expect(access.check(requestOn(bound, 'Bearer s3cret'), 'read')).toBeUndefined();
      expect(access.check(requestOn(bound, 'Bearer s3cret'), 'write')).toBeUndefined();
    }
  });
});

describe('agent dashboard over HTTP', () => {
  it('serves the page with a CSP and no inline script, its assets from the package, and JSON data, read-only on loopback', async () => {
    const agent = await agentWith();
    expect(agent.dashboardUrl).toBe(`${agent.url}/dashboard/`);
    const bare = await fetch(`${agent.url}/dashboard`, { redirect: 'manual' });
    expect([bare.status, bare.headers.get('location')]).toEqual([308, 'dashboard/']);
    const page = await fetch(agent.dashboardUrl!);
    const html = await page.text();
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self';/);
    expect(html).not.toMatch(/<script>|<script [^>]*>[^<]|\son[a-z]+=/);
    for (const asset of ['uplot.js', 'uplot.css', 'agent.js', 'common.js', 'dashboard.css'])
      expect((await fetch(`${agent.dashboardUrl}assets/${asset}`)).status).toBe(200);
    expect((await fetch(`${agent.dashboardUrl}assets/../../package.json`)).status).toBe(404);
    expect((await fetch(`${agent.dashboardUrl}assets/%2e%2e%2fpackage.json`)).status).toBe(404);

    await fetch(agent.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ protocolHash: 'b'.repeat(40), body: {} }),
    });
    const protocols = (await (await fetch(`${agent.dashboardUrl}api/protocols`)).json()) as {
      rows: { name: string; answeredBy: string }[];
    };
    expect(protocols).toMatchObject({
      total: 1,
      offset: 0,
      rows: [{ name: 'Double', answeredBy: 'routine', origin: 'folder', file: 'protocols/double.md' }],
    });
    expect(await (await fetch(`${agent.dashboardUrl}api/protocols?offset=1&limit=10`)).json()).toEqual({
      total: 1,
      offset: 1,
      limit: 0,
      rows: [],
    });
    const live = (await (await fetch(`${agent.dashboardUrl}api/live`)).json()) as {
      failures: { reason: string; protocol: string }[];
    };
    expect(live.failures).toMatchObject([{ protocol: 'unknown', reason: 'Unsupported protocol' }]);

    const approve = await fetch(`${agent.dashboardUrl}api/routines/double-0000/approve`, { method: 'POST' });
    expect(approve.status).toBe(403);
    expect(await approve.json()).toEqual({ status: 'failure', error: REVIEW_NEEDS_TOKEN });
  });

  it('counts open conversations per protocol and pushes each query on the live feed', async () => {
    const agent = await agentWith();
    const { hash } = (
      (await (await fetch(`${agent.dashboardUrl}api/protocols`)).json()) as { rows: { hash: string }[] }
    ).rows[0]!;
    const controller = new AbortController();
    const events = await fetch(`${agent.dashboardUrl}events`, { signal: controller.signal });
    expect(events.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    const until = async (pattern: RegExp) => {
      while (!pattern.test(text)) text += (await reader.read()).value ?? '';
    };
    await until(/event: hello\n/);
    const started = await fetch(agent.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ protocolHash: hash, body: { n: 2 }, multiround: true }),
    });
    expect(started.status).toBe(200);
    await until(/event: changed\ndata: .*\n\n/);
    const changed = JSON.parse(/event: changed\ndata: (.*)\n\n/.exec(text)![1]!) as {
      events: { protocol: string; path: string }[];
      live: { open: number; openByProtocol: { name: string; count: number }[] };
    };
    expect(changed.events).toMatchObject([{ kind: 'query', protocol: 'Double', path: 'routine' }]);
    expect(changed.live.openByProtocol).toEqual([{ name: 'Double', hash, count: 1 }]);
    controller.abort();
  });

  it('with a token: the page loads for the sign-in form, data and the feed need the bearer token', async () => {
    const agent = await agentWith(['s3cret']);
    expect((await fetch(agent.dashboardUrl!)).status).toBe(200);
    expect(await (await fetch(`${agent.dashboardUrl}api/access`)).json()).toEqual({ tokens: true });
    for (const path of ['api/overview', 'api/protocols', 'api/live', 'api/cost', 'api/routines', 'events']) {
      const refused = await fetch(`${agent.dashboardUrl}${path}`);
      expect([path, refused.status, refused.headers.get('www-authenticate')]).toEqual([path, 401, 'Bearer']);
    }
    const overview = await fetch(`${agent.dashboardUrl}api/overview`, { headers: { authorization: 'Bearer s3cret' } });
    expect(overview.status).toBe(200);
    expect((await fetch(`${agent.dashboardUrl}api/routines/x/approve`, { method: 'POST' })).status).toBe(401);
    const unknown = await fetch(`${agent.dashboardUrl}api/routines/x/approve`, {
      method: 'POST',
      headers: { authorization: 'Bearer s3cret' },
    });
    expect(unknown.status).toBe(404);
  });

  it('is mounted by agoraRouter under any prefix', async () => {
    const folder = await makeAgentFolder({ 'protocols/double.md': DOUBLE, 'routines/double.ts': ROUTINE });
    const receiver = await Receiver.start({ dir: folder.dir, llm: null, watch: false, logger: silentLogger });
    const app = express();
    app.use('/agora', agoraRouter(receiver, { faces: false }));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    cleanups.push(async () => {
      await new Promise((resolve) => server.close(resolve));
      await receiver.close();
      await folder.cleanup();
    });
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}/agora`;
    const bare = await fetch(`${base}/dashboard`, { redirect: 'manual' });
    expect(new URL(bare.headers.get('location')!, `${base}/dashboard`).href).toBe(`${base}/dashboard/`);
    expect((await fetch(`${base}/dashboard/`)).headers.get('content-type')).toMatch(/^text\/html/);
    expect(await (await fetch(`${base}/dashboard/api/protocols`)).json()).toMatchObject({
      total: 1,
      rows: [{ name: 'Double', answeredBy: 'routine' }],
    });
  });
});
