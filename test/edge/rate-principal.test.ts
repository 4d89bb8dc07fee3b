import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agoraMount } from '../../src/agora/handler.js';
import { callerKey } from '../../src/edge/guard.js';
import { compose, type Edge } from '../../src/edge/mount.js';
import { OAuthResource } from '../../src/edge/oauth.js';
import { fakeReceiver } from '../agora/_fixtures.js';
import { startAuthorizationServer, type AuthorizationServer } from '../helpers/authorization-server.js';

const AUDIENCE = 'http://agent.test/';

describe('rate limits per principal', () => {
  let as: AuthorizationServer;
  let edge: Edge;

  beforeAll(async () => {
    as = await startAuthorizationServer();
    const oauth = new OAuthResource({ issuer: as.issuer, audience: AUDIENCE });
    edge = compose([agoraMount(fakeReceiver().receiver)], {
      tokens: ['alice-static-token', 'bob-static-token'],
      oauth,
      rateLimit: { windowMs: 60_000, max: 2 },
    });
  });
  afterAll(() => as.close());

  const accessToken = (subject: string) =>
    new SignJWT({ scope: 'agora.query' })
      .setProtectedHeader({ alg: 'RS256', kid: as.kid, typ: 'at+jwt' })
      .setIssuer(as.issuer)
      .setAudience(AUDIENCE)
      .setSubject(subject)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(as.privateKey);

  // The status of `POST /` from an address with a token (none: anonymous).
  const ask = async (remoteAddress: string, token?: string) =>
    (
      await edge.handle({
        method: 'POST',
        path: '/',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: Buffer.from(JSON.stringify({ protocolHash: null, body: 'hi' })),
        remoteAddress,
      })
    ).status;

  it('gives two static tokens behind one address a budget each, and one token on two addresses one budget', async () => {
    const nat = '198.51.100.7';
    expect([await ask(nat, 'alice-static-token'), await ask(nat, 'alice-static-token')]).toEqual([200, 200]);
    // Bob, behind the same address, has his own budget; Alice, from elsewhere, has spent hers.
    expect(await ask(nat, 'bob-static-token')).toBe(200);
    expect(await ask('203.0.113.9', 'alice-static-token')).toBe(429);
    expect(await ask(nat, 'alice-static-token')).toBe(429);
  });

  it('counts access tokens by their subject, across addresses and whatever token carries it', async () => {
    const [carol, carolAgain, dave] = await Promise.all([
      accessToken('carol'),
      accessToken('carol'),
      accessToken('dave'),
    ]);
    const nat = '198.51.100.8';
    expect(await ask(nat, carol)).toBe(200);
    // Another token of the same subject, from another address, spends the same budget.
    expect(await ask('203.0.113.10', carolAgain)).toBe(200);
    expect(await ask('203.0.113.11', carol)).toBe(429);
    expect([await ask(nat, dave), await ask(nat, dave)]).toEqual([200, 200]);
  });

  it('counts requests without a token, or with a bad one, by their address', async () => {
    const address = '192.0.2.44';
    expect(await ask(address)).toBe(401);
    expect(await ask(address, 'not-a-token')).toBe(401);
    expect(await ask(address)).toBe(429);
    // The principal's budget is not the address's: a good token from there still passes.
    expect(await ask(address, await accessToken('erin'))).toBe(200);
    expect(callerKey('192.0.2.44', 'oauth:erin')).toMatch(/^principal:[\w-]{22}$/);
    expect(callerKey('192.0.2.44')).toBe('192.0.2.44');
  });
});
