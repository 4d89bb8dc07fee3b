import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../../src/net/client.js';
import { ClientCredentials } from '../../src/net/token-source.js';
import {
  CLIENT_ID,
  CLIENT_SECRET,
  startAuthorizationServer,
  type AuthorizationServer,
} from '../helpers/authorization-server.js';

describe('client credentials', () => {
  let as: AuthorizationServer;
  beforeAll(async () => {
    as = await startAuthorizationServer({ ttlSeconds: 120 });
  });
  afterAll(() => as.close());

  it('finds the token endpoint from the issuer, keeps the token, and renews it before it expires', async () => {
    let now = Date.now();
    const source = new ClientCredentials({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      issuer: as.issuer,
      resource: 'http://agent.test/',
      scope: 'agora.query',
      now: () => now,
    });
    const [first, same] = await Promise.all([source.token(), source.token()]);
    expect(same).toBe(first);
    expect(decodeJwt(first)).toMatchObject({ aud: 'http://agent.test/', scope: 'agora.query', sub: CLIENT_ID });
    now += 30_000;
    expect(await source.token()).toBe(first);
    // 120 s tokens are renewed 60 s before they expire.
    now += 31_000;
    expect(await source.token()).not.toBe(first);
  });

  it('says why the authorization server refused, and gives the HTTP client its token', async () => {
    const wrong = new ClientCredentials({ clientId: CLIENT_ID, clientSecret: 'wrong', tokenUrl: `${as.issuer}/token` });
    await expect(wrong.token()).rejects.toThrow(/status 401 invalid_client/);
    let seen: string | null = null;
    const client = new HttpClient({
      tokenSource: new ClientCredentials({
        clientId: CLIENT_ID,
        clientSecret: CLIENT_SECRET,
        issuer: as.issuer,
        resource: 'http://agent.test/',
      }),
      fetch: async (_url, init) => {
        seen = new Headers(init?.headers).get('authorization');
        return new Response('{}', { headers: { 'content-type': 'application/json' } });
      },
    });
    await client.request('GET', 'http://agent.test/x');
    expect(seen).toMatch(/^Bearer ey/);
  });
});
