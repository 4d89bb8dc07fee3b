import { generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agoraMount } from '../../src/agora/handler.js';
import { compose } from '../../src/edge/mount.js';
import { listen, type RunningServer } from '../../src/edge/node.js';
import { OAuthResource } from '../../src/edge/oauth.js';
import { fakeReceiver } from '../agora/_fixtures.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/authorization-server.js';

const AUDIENCE = 'http://agent.test/';
const QUERY = JSON.stringify({ protocolHash: null, body: 'hello' });

describe('the edge as an OAuth resource server', () => {
  let as: AuthorizationServer;
  let server: RunningServer;
  let fake: ReturnType<typeof fakeReceiver>;

  beforeAll(async () => {
    as = await startAuthorizationServer();
    fake = fakeReceiver();
    const oauth = new OAuthResource({
      issuer: as.issuer,
      audience: AUDIENCE,
      scopes: { query: ['agora.query'], read: ['agora.read'] },
      clockToleranceMs: 5_000,
    });
    server = await listen(compose([agoraMount(fake.receiver)], { tokens: ['static-secret'], oauth }), {
      port: 0,
      host: '127.0.0.1',
    });
  });
  afterAll(async () => {
    await server.close();
    await as.close();
  });

  const ask = (token?: string) =>
    fetch(`${server.url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: QUERY,
    });

  // A token signed with the issuer's own key, claims as given (defaults: valid for the audience, 5 minutes).
  const signed = (claims: Record<string, unknown> = {}, key: CryptoKey = as.privateKey, kid = as.kid) =>
    new SignJWT({ scope: 'agora.read agora.query', ...claims })
      .setProtectedHeader({ alg: 'RS256', kid, typ: 'at+jwt' })
      .setIssuer((claims.iss as string) ?? as.issuer)
      .setAudience((claims.aud as string) ?? AUDIENCE)
      .setSubject('alice')
      .setIssuedAt()
      .setExpirationTime((claims.exp as number) ?? '5m')
      .sign(key);

  it('publishes its Protected Resource Metadata (RFC 9728) without a token', async () => {
    const response = await fetch(`${server.url}/.well-known/oauth-protected-resource`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      resource: AUDIENCE,
      authorization_servers: [as.issuer],
      scopes_supported: ['agora.read', 'agora.query'],
      bearer_methods_supported: ['header'],
    });
  });

  it('answers a missing token with 401 and a challenge naming the metadata', async () => {
    const response = await ask();
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(
      'Bearer resource_metadata="http://agent.test/.well-known/oauth-protected-resource"',
    );
    expect(fake.calls).toHaveLength(0);
  });

  it('accepts a token the authorization server issued by client credentials for this resource', async () => {
    const token = await as.token({ resource: AUDIENCE, scope: 'agora.read agora.query' });
    const response = await ask(token);
    expect(response.status).toBe(200);
    expect(fake.calls.at(-1)?.method).toBe('query');
  });

  it('keeps taking the static tokens beside access tokens', async () => {
    expect((await ask('static-secret')).status).toBe(200);
    expect((await ask('static-secret-not')).status).toBe(401);
  });

  it('refuses with 403 insufficient_scope a token without the scope of the request kind', async () => {
    const token = await as.token({ resource: AUDIENCE, scope: 'agora.read' });
    const response = await ask(token);
    expect(response.status).toBe(403);
    expect(response.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
    expect(response.headers.get('www-authenticate')).toContain('scope="agora.query"');
  });

  it('refuses a token issued for another resource (RFC 8707 audience)', async () => {
    const token = await as.token({ resource: 'http://other-agent.test/', scope: 'agora.query' });
    const response = await ask(token);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('accepts a hand-made token signed by the issuer, and refuses each bad one', async () => {
    expect((await ask(await signed())).status).toBe(200);
    const answered = fake.calls.length;
    const other = await generateKeyPair('RS256');
    // The issuer's public key as anyone can fetch it, used as an HMAC secret.
    const publicJwk = ((await (await fetch(`${as.issuer}/jwks`)).json()) as { keys: unknown[] }).keys[0];
    const parts = (await signed()).split('.');
    const tampered = Buffer.from(parts[1]!, 'base64url').toString().replace('"alice"', '"admin"');
    const none = [Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url'), parts[1], ''].join(
      '.',
    );
    const hs256 = await new SignJWT({ scope: 'agora.query' })
      .setProtectedHeader({ alg: 'HS256', kid: as.kid })
      .setIssuer(as.issuer)
      .setAudience(AUDIENCE)
      .setSubject('mallory')
      .setExpirationTime('5m')
      .sign(new TextEncoder().encode(JSON.stringify(publicJwk)));
    const bad: Record<string, string> = {
      expired: await signed({ exp: Math.floor(Date.now() / 1000) - 60 }),
      'not yet valid': await signed({ nbf: Math.floor(Date.now() / 1000) + 600 }),
      'wrong audience': await signed({ aud: 'http://other-agent.test/' }),
      'wrong issuer': await signed({ iss: 'http://127.0.0.1:1' }),
      'unknown key': await signed({}, other.privateKey, 'unknown-kid'),
      'alg none': none,
      'tampered payload': [parts[0], Buffer.from(tampered).toString('base64url'), parts[2]].join('.'),
      'HS256 keyed with the public key': hs256,
      'not a JWT': 'opaque-token',
      'too long': 'x'.repeat(9000),
    };
    for (const [name, token] of Object.entries(bad)) {
      const response = await ask(token);
      expect([name, response.status]).toEqual([name, 401]);
      expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"');
    }
    expect(fake.calls).toHaveLength(answered);
  });

  it('lets public routes through with or without a token, a bad one included', async () => {
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    const response = await fetch(`${server.url}/health`, { headers: { authorization: 'Bearer nonsense' } });
    expect(response.status).toBe(200);
  });
});

describe('an issuer that cannot be reached', () => {
  it('answers 503 rather than letting anyone through, and refuses weak algorithms when configured', async () => {
    const oauth = new OAuthResource({ issuer: 'http://127.0.0.1:1', audience: AUDIENCE, timeoutMs: 500 });
    const edge = compose([agoraMount(fakeReceiver().receiver)], { oauth });
    const response = await edge.handle({
      method: 'POST',
      path: '/',
      headers: { authorization: 'Bearer a.b.c', 'content-type': 'application/json' },
      body: Buffer.from(QUERY),
    });
    expect(response.status).toBe(503);
    expect(() => new OAuthResource({ issuer: 'http://as.test', audience: AUDIENCE, algorithms: ['HS256'] })).toThrow(
      /HS256 is not an asymmetric signature/,
    );
    expect(() => new OAuthResource({ issuer: 'http://as.test', audience: AUDIENCE, algorithms: ['none'] })).toThrow();
  });
});
