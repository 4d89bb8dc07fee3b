import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent } from '../../src/agent.js';
import { hostRule, isLoopbackHost } from '../../src/edge/host.js';
import { startHub } from '../../src/hub/server.js';
import { silentLogger } from '../../src/log.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';

const DOUBLE =
  '---\nname: Double\ndescription: Double a number.\n---\n\nThe sender sends JSON {"n": number}; the receiver replies {"doubled": number}.\n';
const ROUTINE = 'export default { async handle(body) { return { doubled: body.n * 2 }; } };\n';
const ATTACKER = 'rebind.attacker.example';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Sent = { status: number; body: string };

/** One request with the Host (and Origin) a DNS-rebinding page sends: its own name, on our address. */
function send(url: string, method: string, path: string, host: string, body?: string, headers = {}): Promise<Sent> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        hostname: target.hostname,
        port: target.port,
        method,
        path,
        headers: {
          host,
          origin: `http://${host}`,
          ...(body ? { 'content-type': 'application/json', accept: 'application/json, text/event-stream' } : {}),
          ...headers,
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/** A WebSocket upgrade's status line, for a Host. */
function upgrade(url: string, path: string, host: string): Promise<number> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const request = httpRequest({
      hostname: target.hostname,
      port: target.port,
      path,
      headers: {
        host,
        origin: `http://${host}`,
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      },
    });
    request.on('upgrade', (response, socket) => (socket.destroy(), resolve(response.statusCode ?? 0)));
    request.on('response', (response) => (response.resume(), resolve(response.statusCode ?? 0)));
    request.on('error', reject);
    request.end();
  });
}

async function agentWith(options: { tokens?: string[]; allowedHosts?: string[]; publicUrl?: string } = {}) {
  const folder = await makeAgentFolder({ 'protocols/double.md': DOUBLE, 'routines/double.ts': ROUTINE });
  const agent = await startAgent({
    dir: folder.dir,
    port: 0,
    host: '127.0.0.1',
    llm: null,
    watch: false,
    logger: silentLogger,
    ...options,
  });
  cleanups.push(async () => {
    await agent.close();
    await folder.cleanup();
  });
  return agent;
}

const MCP_CALL = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
const AGORA_QUERY = JSON.stringify({ body: 'hello' });

describe('the Host rule', () => {
  it('takes loopback names, IP addresses, the public URL host and the allowed hosts; refuses other names', () => {
    const allows = hostRule({
      publicUrl: 'https://agent.example/agora',
      allowedHosts: ['lan.example', 'x.test:8443'],
    })!;
    for (const host of ['localhost', 'LOCALHOST:3000', '127.0.0.1', '127.9.9.9:80', '[::1]:3000', '10.0.0.5:8080'])
      expect([host, allows(host)]).toEqual([host, true]);
    for (const host of ['agent.example', 'agent.example:443', 'Lan.Example:1', 'x.test:8443', 'agent.example.'])
      expect([host, allows(host)]).toEqual([host, true]);
    for (const host of [ATTACKER, 'localhost.evil.example', 'x.test:8444', 'agent.example@evil', '', 'a b'])
      expect([host, allows(host)]).toEqual([host, false]);
    expect(allows(undefined)).toBe(true);
    expect(isLoopbackHost('[::1]:80')).toBe(true);
    expect(isLoopbackHost('10.0.0.1')).toBe(false);
  });

  it('holds without a token, or when hosts are named; a token alone or `*` turns it off', () => {
    expect(hostRule({})).toBeDefined();
    expect(hostRule({ credentialsRequired: true })).toBeUndefined();
    expect(hostRule({ credentialsRequired: true, allowedHosts: ['agent.example'] })?.(ATTACKER)).toBe(false);
    expect(hostRule({ allowedHosts: ['*'] })).toBeUndefined();
  });

  it('answers a DNS-rebinding page 421 on every mount of a tokenless agent, and its own names as before', async () => {
    const agent = await agentWith();
    const own = new URL(agent.url).host;
    const refused = await Promise.all([
      send(agent.url, 'POST', '/', ATTACKER, AGORA_QUERY),
      send(agent.url, 'GET', '/wellknown', ATTACKER),
      send(agent.url, 'POST', '/mcp', ATTACKER, MCP_CALL),
      send(agent.url, 'GET', '/.well-known/agent-card.json', ATTACKER),
      send(agent.url, 'POST', '/invoke', ATTACKER, '{}'),
      send(agent.url, 'GET', '/roar/card', ATTACKER),
      send(agent.url, 'GET', '/dashboard/api/protocols', ATTACKER),
      send(agent.url, 'OPTIONS', '/', ATTACKER),
    ]);
    for (const answer of refused) expect(answer.status).toBe(421);
    expect(refused[0]!.body).toContain('Misdirected request');
    expect(refused[0]!.body).toContain(ATTACKER);
    expect(await upgrade(agent.url, '/roar/ws', ATTACKER)).toBe(421);

    for (const host of [own, `localhost:${new URL(agent.url).port}`]) {
      expect((await send(agent.url, 'POST', '/', host, AGORA_QUERY)).status).toBe(200);
      expect((await send(agent.url, 'POST', '/mcp', host, MCP_CALL)).status).toBe(200);
      expect((await send(agent.url, 'GET', '/dashboard/api/protocols', host)).status).toBe(200);
    }
    expect(await upgrade(agent.url, '/roar/ws', own)).toBe(101);
  });

  it('answers the --public-url host and --allowed-host names; with a token a strange Host meets the token check', async () => {
    const named = await agentWith({ publicUrl: 'https://agent.example', allowedHosts: ['lan.example'] });
    expect((await send(named.url, 'POST', '/', 'agent.example', AGORA_QUERY)).status).toBe(200);
    expect((await send(named.url, 'POST', '/', 'lan.example:8080', AGORA_QUERY)).status).toBe(200);
    expect((await send(named.url, 'POST', '/', ATTACKER, AGORA_QUERY)).status).toBe(421);

    const tokened = await agentWith({ tokens: ['s3cret'] });
    expect((await send(tokened.url, 'POST', '/', ATTACKER, AGORA_QUERY)).status).toBe(401);
    const auth = { authorization: 'Bearer s3cret' };
    expect((await send(tokened.url, 'POST', '/', 'agent.example', AGORA_QUERY, auth)).status).toBe(200);

    const both = await agentWith({ tokens: ['s3cret'], allowedHosts: ['agent.example'] });
    expect((await send(both.url, 'POST', '/', ATTACKER, AGORA_QUERY, auth)).status).toBe(421);
    expect((await send(both.url, 'POST', '/', 'agent.example', AGORA_QUERY, auth)).status).toBe(200);
  });

  it("refuses a rebinding page's registration on a tokenless hub", async () => {
    const running = await startHub({ port: 0, tickMs: 0, logger: silentLogger, allowPrivateAgents: true });
    cleanups.push(() => running.close());
    const planted = JSON.stringify({ url: 'http://127.0.0.1:9/planted' });
    const answer = await send(running.url, 'POST', '/agents', ATTACKER, planted);
    expect(answer.status).toBe(421);
    expect(JSON.parse(answer.body)).toMatchObject({ error: expect.stringContaining('Misdirected request') });
    expect((await send(running.url, 'GET', '/health', ATTACKER)).status).toBe(421);
    expect((await send(running.url, 'GET', '/agents', new URL(running.url).host)).status).toBe(200);
  });
});
