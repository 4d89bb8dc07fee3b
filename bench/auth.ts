// The cost of the guard's token check per request, in process (no sockets, so only the check differs): no token
// required, a static token, and a JWT access token verified against a JWKS served on loopback (RFC 8414 discovery):
// the same token again (verified once, then found by its digest: what a client sending its token on every request
// costs), and a token never seen (the cache missed: the signature verified, ES256 and RS256, the IdPs' usual one).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { compose, type Mount } from '../src/edge/mount.js';
import { OAuthResource } from '../src/edge/oauth.js';
import { failure, json } from '../src/edge/response.js';

const AUDIENCE = 'http://agent.bench/';

const mount: Mount = {
  name: 'bench',
  routes: [{ path: '/', methods: ['POST'] }],
  handle: () => json(200, { status: 'success' }),
  failure,
};

/** Mean µs per request of each guard, over `duration` seconds each. */
export async function benchAuth(duration: number, log: (line: string) => void): Promise<string> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const rsa = await generateKeyPair('RS256');
  const keys = [
    { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' },
    { ...(await exportJWK(rsa.publicKey)), kid: 'k2', alg: 'RS256', use: 'sig' },
  ];
  const server = createServer((request, response) => {
    const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const body =
      request.url === '/jwks' ? { keys } : { issuer, jwks_uri: `${issuer}/jwks`, token_endpoint: `${issuer}/t` };
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sign = (alg: 'ES256' | 'RS256', jti: string) =>
    new SignJWT({ scope: 'agora.query', jti })
      .setProtectedHeader({ alg, kid: alg === 'ES256' ? 'k1' : 'k2' })
      .setIssuer(issuer)
      .setAudience(AUDIENCE)
      .setSubject('bench')
      .setExpirationTime('1h')
      .sign(alg === 'ES256' ? privateKey : rsa.privateKey);
  const token = await sign('ES256', 'same');
  // Distinct tokens, signed before the clock starts, more than the verifier keeps (1024): each one a cache miss.
  const fresh = async (alg: 'ES256' | 'RS256') => {
    const pool = await Promise.all(Array.from({ length: 2048 }, (_, index) => sign(alg, `${alg}-${index}`)));
    let next = 0;
    return () => pool[next++ % pool.length]!;
  };
  const oauth = () => ({
    oauth: new OAuthResource({ issuer, audience: AUDIENCE, scopes: { query: ['agora.query'] } }),
  });
  const cases: [string, ReturnType<typeof compose>, (() => string) | undefined][] = [
    ['no token required', compose([mount]), undefined],
    ['static token', compose([mount], { tokens: ['a-static-secret'] }), () => 'a-static-secret'],
    ['JWT, verified before (cached)', compose([mount], oauth()), () => token],
    ['JWT, first verification (ES256)', compose([mount], oauth()), await fresh('ES256')],
    ['JWT, first verification (RS256)', compose([mount], oauth()), await fresh('RS256')],
  ];
  const rows: string[] = ['| guard | requests | µs per request | vs none |', '|---|---:|---:|---:|'];
  let base = 0;
  for (const [name, edge, bearer] of cases) {
    const request = () =>
      edge.handle({
        method: 'POST',
        path: '/',
        headers: bearer ? { authorization: `Bearer ${bearer()}` } : {},
        body: Buffer.from('{}'),
      });
    const first = await request();
    if (first.status !== 200) throw new Error(`${name}: ${first.status}`);
    let count = 0;
    const started = performance.now();
    const until = started + duration * 1000;
    while (performance.now() < until) {
      for (let index = 0; index < 100; index++) await request();
      count += 100;
    }
    const micros = ((performance.now() - started) * 1000) / count;
    if (base === 0) base = micros;
    log(`auth: ${name} ${micros.toFixed(2)} µs`);
    rows.push(`| ${name} | ${count} | ${micros.toFixed(2)} | ${(micros / base).toFixed(1)}× |`);
  }
  server.close();
  return rows.join('\n');
}
