import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../../src/net/client.js';
import { ClientCredentials, originResource } from '../../src/net/token-source.js';
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

  it('asks for a token only for a request to its origin, and one per origin with originResource', async () => {
    const asked: (string | undefined)[] = [];
    const fixed = new ClientCredentials({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      tokenUrl: `${as.issuer}/token`,
      resource: 'http://agent.test',
    });
    const seen: Record<string, string | null> = {};
    const connector = (async (url: string, init?: RequestInit) => {
      seen[new URL(url).origin] = new Headers(init?.headers).get('authorization');
      return new Response('{}', { headers: { 'content-type': 'application/json' } });
    }) as typeof fetch;
    const client = new HttpClient({
      tokenSource: { token: (url) => (asked.push(url), fixed.token(url)) },
      tokenOrigin: 'http://agent.test',
      fetch: connector,
    });
    await client.request('GET', 'http://elsewhere.test/x');
    expect(asked).toEqual([]);
    expect(seen['http://elsewhere.test']).toBeNull();
    await client.request('GET', 'http://agent.test/x');
    expect(asked).toEqual(['http://agent.test/x']);
    // A hub's client: each origin its own token, whose audience is that origin.
    const each = new ClientCredentials({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      issuer: as.issuer,
      resource: originResource,
    });
    const hub = new HttpClient({ tokenSource: each, fetch: connector });
    await hub.request('GET', 'http://one.test/a');
    await hub.request('GET', 'http://two.test:8080/b');
    const audience = (origin: string) => decodeJwt(seen[origin]!.slice('Bearer '.length)).aud;
    expect(audience('http://one.test')).toBe('http://one.test');
    expect(audience('http://two.test:8080')).toBe('http://two.test:8080');
  });
});
