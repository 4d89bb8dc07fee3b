import { createServer } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveReceiver } from '../../src/agent/mounts.js';
import type { RunningServer } from '../../src/edge/node.js';
import { OAuthResource } from '../../src/edge/oauth.js';
import { fakeReceiver } from '../faces/_helpers.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  startAuthorizationServer,
  type AuthorizationServer,
} from '../helpers/authorization-server.js';

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

describe('an agent behind an OAuth 2.1 authorization server', () => {
  let as: AuthorizationServer;
  let server: RunningServer;
  let url: string;

  beforeAll(async () => {
    as = await startAuthorizationServer();
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const oauth = new OAuthResource({
      issuer: as.issuer,
      audience: url,
      scopes: { read: ['agora.read'], query: ['agora.query'], admin: ['agora.admin'] },
    });
    server = await serveReceiver(fakeReceiver(), {
      port,
      host: '127.0.0.1',
      publicUrl: url,
      oauth,
      dashboard: false,
      logger: { error() {}, warn() {}, info() {} } as never,
    });
  });
  afterAll(async () => {
    await server.close();
    await as.close();
  });

  const routes: [string, string, unknown][] = [
    ['POST', '/', { protocolHash: null, body: 'hi' }],
    ['POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }],
    ['POST', '/a2a', { jsonrpc: '2.0', id: 1, method: 'message/send', params: {} }],
    ['POST', '/roar/message', {}],
    ['POST', '/invoke', {}],
    ['GET', '/metrics', undefined],
    ['DELETE', '/conversations/x', undefined],
  ];

  it('refuses every non-public route of every face without a token, with the RFC 9728 challenge', async () => {
    for (const [method, path, body] of routes) {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect([method, path, response.status]).toEqual([method, path, 401]);
      expect(response.headers.get('www-authenticate')).toBe(
        `Bearer resource_metadata="${url}/.well-known/oauth-protected-resource"`,
      );
    }
  });

  it('accepts a client-credentials token end to end, and a read-only token only reads', async () => {
    const token = await as.token({ resource: url, scope: 'agora.read agora.query' });
    const asked = await fetch(`${url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ protocolHash: null, body: 'hello' }),
    });
    expect(asked.status).toBe(200);
    expect(await asked.json()).toMatchObject({ status: 'success', body: 'turn 1: hello' });
    const reader = await as.token({
      resource: url,
      scope: 'agora.read',
      clientId: 'reader',
      clientSecret: 'a-long-reader-secret-for-tests-only',
    });
    const metrics = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${reader}` } });
    expect(metrics.status).toBe(200);
    const refused = await fetch(`${url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${reader}` },
      body: JSON.stringify({ protocolHash: null, body: 'hello' }),
    });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
  });

  it('says so on its cards: A2A security schemes, ROAR and OAP auth', async () => {
    const a2a = (await (await fetch(`${url}/.well-known/agent-card.json`)).json()) as Record<string, any>;
    expect(a2a.securitySchemes.bearer.httpAuthSecurityScheme).toEqual({ scheme: 'Bearer', bearerFormat: 'JWT' });
    expect(a2a.securitySchemes.oauth.oauth2SecurityScheme.flows.clientCredentials.tokenUrl).toBe(`${as.issuer}/token`);
    expect(a2a.securityRequirements).toContainEqual({
      schemes: { oauth: { list: ['agora.read', 'agora.query', 'agora.admin'] } },
    });
    const roar = (await (await fetch(`${url}/roar/card`)).json()) as Record<string, any>;
    expect(roar.metadata.auth).toEqual({
      required: true,
      scheme: 'bearer',
      resource_metadata: `${url}/.well-known/oauth-protected-resource`,
      authorization_servers: [as.issuer],
    });
    const oap = (await (await fetch(`${url}/`)).json()) as Record<string, any>;
    expect(oap.auth).toMatchObject({ required: true, authorization_servers: [as.issuer] });
  });

  it("lets the MCP SDK's own client connect with its client-credentials provider (401, metadata, token, retry)", async () => {
    const authProvider = new ClientCredentialsProvider({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      expectedIssuer: as.issuer,
      scope: 'agora.read agora.query',
    });
    const client = new Client({ name: 'oauth-host', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { authProvider });
    await client.connect(transport).catch(async (error: unknown) => {
      // The SDK's flow: a 401 tells it to fetch a token, after which the host connects again.
      if (!String(error).includes('Unauthorized')) throw error;
      await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { authProvider }));
    });
    const tools = await client.listTools();
    expect(tools.tools.length).toBeGreaterThan(0);
    expect(authProvider.tokens()?.access_token).toBeTypeOf('string');
    await client.close();
  });
});
