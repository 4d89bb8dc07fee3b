// The agent dashboard behind an OAuth authorization server: its data refuses a missing or bad token with the same
// RFC 9728 challenge as every other route, and the page's bearer sign-in takes an access token (reading needs the
// `read` scope).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agoraMount } from '../../src/agora/handler.js';
import { createAgentDashboard } from '../../src/dashboard/agent-dashboard.js';
import { compose } from '../../src/edge/mount.js';
import { listen, type RunningServer } from '../../src/edge/node.js';
import { OAuthResource } from '../../src/edge/oauth.js';
import { silentLogger } from '../../src/log.js';
import { Receiver } from '../../src/receiver.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/authorization-server.js';

const AUDIENCE = 'http://agent.test';
const CHALLENGE = `Bearer resource_metadata="${AUDIENCE}/.well-known/oauth-protected-resource"`;

describe('the agent dashboard with --auth-issuer', () => {
  let as: AuthorizationServer;
  let server: RunningServer;
  let receiver: Receiver;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    as = await startAuthorizationServer();
    const folder = await makeAgentFolder({});
    cleanup = folder.cleanup;
    receiver = await Receiver.start({ dir: folder.dir, llm: null, watch: false, logger: silentLogger });
    const oauth = new OAuthResource({
      issuer: as.issuer,
      audience: AUDIENCE,
      scopes: { read: ['agora.read'], query: ['agora.query'], admin: ['agora.admin'] },
    });
    const dashboard = createAgentDashboard(receiver, { oauth: true, logger: silentLogger });
    server = await listen(compose([agoraMount(receiver, { logger: silentLogger }), dashboard], { oauth }), {
      port: 0,
      host: '127.0.0.1',
      logger: silentLogger,
    });
  });
  afterAll(async () => {
    await server.close();
    await receiver.close();
    await cleanup();
    await as.close();
  });

  const overview = (token?: string) =>
    fetch(`${server.url}/dashboard/api/overview`, {
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    });

  it('answers its data without a token 401 with the RFC 9728 challenge, and a bad token with invalid_token', async () => {
    const missing = await overview();
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe(CHALLENGE);
    const bad = await overview('not-a-jwt');
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toBe(`Bearer error="invalid_token", ${CHALLENGE.slice(7)}`);
  });

  it('signs in with an access token as the page sends it (a bearer header): read scope reads, none is 403', async () => {
    const reader = await as.token({ resource: AUDIENCE, scope: 'agora.read' });
    const read = await overview(reader);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ tokens: true });
    const queryOnly = await as.token({ resource: AUDIENCE, scope: 'agora.query' });
    expect((await overview(queryOnly)).status).toBe(403);
  });
});
