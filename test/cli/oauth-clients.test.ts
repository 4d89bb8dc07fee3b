// Clients of protected agents and hubs by the client-credentials grant, against a real authorization server
// (oidc-provider on loopback): `agora send`, `agora mcp`, `agora hub register` and `agora chain` with --client-id, the
// hub's own hops with its credentials, and a token renewed before it expires.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { decodeJwt } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { serveReceiver } from '../../src/agent/mounts.js';
import type { RunningServer } from '../../src/edge/node.js';
import { OAuthResource } from '../../src/edge/oauth.js';
import { runChain } from '../../src/hub/chains.js';
import { startHub, type RunningHub } from '../../src/hub/server.js';
import { silentLogger } from '../../src/log.js';
import { ClientCredentials, originResource } from '../../src/net/token-source.js';
import { Sender } from '../../src/sender/sender.js';
import { fakeReceiver } from '../faces/_helpers.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  startAuthorizationServer,
  type AuthorizationServer,
} from '../helpers/authorization-server.js';
import { main } from '../../src/cli/main.js';
import { captureOutput, cliArgs, runCli } from '../helpers/cli.js';
import { freePort } from '../helpers/redis-server.js';

const SCOPES = { read: ['agora.read'], query: ['agora.query'], admin: ['agora.admin'] };
// The secret goes by the environment, as the docs advise; the rest by flags.
const ENV = { AGORA_CLIENT_SECRET: CLIENT_SECRET, AGORA_TOKEN: '', AGORA_HUB_TOKEN: '', AGORA_AUTH_ISSUER: '' };

describe('clients by the client-credentials grant', () => {
  let as: AuthorizationServer;
  let agent: RunningServer;
  let agentUrl: string;
  let hub: RunningHub;
  let hubUrl: string;

  beforeAll(async () => {
    as = await startAuthorizationServer({ ttlSeconds: 120 });
    const [agentPort, hubPort] = [await freePort(), await freePort()];
    agentUrl = `http://127.0.0.1:${agentPort}`;
    hubUrl = `http://127.0.0.1:${hubPort}`;
    agent = await serveReceiver(fakeReceiver(), {
      port: agentPort,
      host: '127.0.0.1',
      publicUrl: agentUrl,
      oauth: new OAuthResource({ issuer: as.issuer, audience: agentUrl, scopes: SCOPES }),
      dashboard: false,
      logger: silentLogger,
    });
    hub = await startHub({
      port: hubPort,
      host: '127.0.0.1',
      allowPrivateAgents: true,
      tickMs: 0,
      rooms: false,
      logger: silentLogger,
      oauth: new OAuthResource({ issuer: as.issuer, audience: hubUrl, scopes: SCOPES }),
      // The hub's own client: each agent's origin is its token's audience.
      tokenSource: new ClientCredentials({
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        issuer: as.issuer,
        resource: originResource,
        scope: 'agora.query',
      }),
    });
  }, 30_000);
  afterAll(async () => {
    await hub?.close();
    await agent?.close();
    await as?.close();
  });

  it('agora send reaches an agent behind the issuer, the token endpoint discovered from --auth-issuer', async () => {
    const sent = await runCli(
      [
        'send',
        agentUrl,
        'hello',
        '--client-id',
        CLIENT_ID,
        '--auth-issuer',
        as.issuer,
        '--client-scope',
        'agora.query',
      ],
      { env: ENV, timeoutMs: 60_000 },
    );
    expect(sent.stderr).toBe('');
    expect(sent.stdout).toBe('turn 1: hello\n');
    expect(sent.code).toBe(0);
    // Without credentials the same command is refused: it is the token that got it in.
    const refused = await runCli(['send', agentUrl, 'hello'], { env: ENV, timeoutMs: 60_000 });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/401|Unauthorized/);
  }, 120_000);

  it('agora mcp bridges a protected /mcp for a host, with --token-url', async () => {
    const client = new Client({ name: 'oauth-host', version: '1.0.0' });
    const args = ['mcp', agentUrl, '--client-id', CLIENT_ID, '--token-url', `${as.issuer}/token`];
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: cliArgs([...args, '--client-scope', 'agora.read agora.query', '--poll', '0']),
        env: { ...process.env, ...ENV } as Record<string, string>,
        stderr: 'pipe',
      }),
    );
    try {
      const tools = await client.listTools();
      // The agent's own MCP face answered (its `tools/list` is a POST /mcp, refused without a token)…
      expect(tools.tools.map((tool) => tool.name)).toEqual(['unit_conversion']);
      // …and a call is a query on the agent.
      const answer = await client.callTool({ name: 'unit_conversion', arguments: { metres: 10 } });
      expect(answer.isError).toBeFalsy();
      expect(JSON.stringify(answer.content)).toContain('converted');
    } finally {
      await client.close();
    }
  }, 120_000);

  it('agora hub register and agora chain reach a protected hub, and the chain hops to a protected agent', async () => {
    const flags = ['--hub', hubUrl, '--client-id', CLIENT_ID, '--auth-issuer', as.issuer];
    const scope = ['--client-scope', 'agora.read agora.query agora.admin'];
    const registered = await runCli(
      ['hub', 'register', agentUrl, ...flags, ...scope, '--name', 'weather', '--capability', 'weather'],
      { env: ENV, timeoutMs: 60_000 },
    );
    expect(registered.stderr).toBe('');
    expect(registered.stdout).toMatch(/^registered weather/);
    const chained = await runCli(['chain', 'weather in Paris', ...flags, ...scope, '--allow-private-agents'], {
      env: ENV,
      timeoutMs: 60_000,
    });
    expect(chained.stderr).toMatch(/hop 1: weather .* ok/);
    expect(chained.stdout).toMatch(/^turn 1: /);
    expect(chained.code).toBe(0);
  }, 120_000);

  it("the hub's own hop to a protected agent goes with the hub's credentials", async () => {
    await hub.hub.register({ url: agentUrl, name: 'weather', capabilities: ['weather'] }).catch(() => undefined);
    const run = await runChain(hub.hub, 'weather in Paris');
    expect(run.hops[0]).toMatchObject({ agentName: 'weather', ok: true });
    // The same hop with a token the issuer never gave is refused by the agent.
    const forged = await runChain(hub.hub, 'weather in Paris', { tokenSource: { token: async () => 'forged' } });
    expect(forged.hops[0]).toMatchObject({ ok: false });
    expect(forged.hops[0]?.error).toMatch(/401/);
  }, 60_000);

  it('renews the token before it expires: the renewal margin is the library’s to set, no waiting', async () => {
    let now = Date.now();
    let asked = 0;
    const tokenSource = new ClientCredentials({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      tokenUrl: `${as.issuer}/token`,
      resource: agentUrl,
      scope: 'agora.query',
      // 120 s tokens renewed 100 s early: at most half their life, so 60 s after they were issued.
      renewBeforeMs: 100_000,
      now: () => now,
      fetch: (input, init) => {
        asked += 1;
        return fetch(input, init);
      },
    });
    const sender = new Sender({ llm: null, logger: silentLogger, tokenSource });
    const first = await tokenSource.token();
    expect((await sender.query(agentUrl, { body: 'one' })).body).toBe('turn 1: one');
    expect(asked).toBe(1);
    now += 59_000;
    expect((await sender.query(agentUrl, { body: 'two' })).body).toBe('turn 1: two');
    expect(asked).toBe(1);
    now += 2_000;
    expect((await sender.query(agentUrl, { body: 'three' })).body).toBe('turn 1: three');
    expect(asked).toBe(2);
    const renewed = await tokenSource.token();
    expect(renewed).not.toBe(first);
    expect(decodeJwt(renewed).aud).toBe(agentUrl);
  }, 60_000);
});

describe('client credentials flags', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    vi.unstubAllEnvs();
  });

  it('says what is missing: the secret, or where tokens come from', async () => {
    vi.stubEnv('AGORA_CLIENT_SECRET', '');
    vi.stubEnv('AGORA_AUTH_ISSUER', '');
    vi.stubEnv('AGORA_TOKEN_URL', '');
    let output = captureOutput();
    expect(await main(['send', 'http://127.0.0.1:9/', 'hi', '--client-id', 'cli'])).toBe(2);
    expect(output.stderr()).toMatch(/--client-id needs its secret: set AGORA_CLIENT_SECRET/);
    vi.restoreAllMocks();
    vi.stubEnv('AGORA_CLIENT_SECRET', 'a-secret');
    output = captureOutput();
    expect(await main(['route', 'weather', '--hub', 'http://127.0.0.1:9', '--client-id', 'cli'])).toBe(2);
    expect(output.stderr()).toMatch(/--client-id needs the token endpoint: --token-url, or --auth-issuer/);
  });
});
