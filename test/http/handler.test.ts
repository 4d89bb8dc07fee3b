import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHandler, type HttpOptions } from '../../src/http/handler.js';
import { startServer, type RunningServer } from '../../src/http/server.js';
import { call, failureOf, fakeReceiver, memoryLogger, METEO_HEX } from './_fixtures.js';

describe('bearer tokens', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer(fakeReceiver().receiver, { port: 0, tokens: ['first-token', 's3cret'], logger: memoryLogger() });
  });
  afterAll(() => server.close());

  it('refuses a missing or wrong token with 401 JSON', async () => {
    const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer wrong' }, { authorization: 's3cret' }, { authorization: 'Basic czNjcmV0' }, { authorization: 'Bearer s3cret2' }];
    for (const headers of attempts) {
      const response = await call(server.url, 'POST', '/', { body: 1 }, headers);
      expect(response.status).toBe(401);
      expect(response.json).toEqual(failureOf('Unauthorized'));
      expect(response.headers.get('www-authenticate')).toBe('Bearer');
    }
    expect((await call(server.url, 'GET', '/metrics')).status).toBe(401);
    expect((await call(server.url, 'DELETE', '/conversations/abc')).status).toBe(401);
  });

  it('accepts any configured token', async () => {
    expect((await call(server.url, 'POST', '/', { body: 1 }, { authorization: 'Bearer s3cret' })).status).toBe(200);
    expect((await call(server.url, 'POST', '/', { body: 1 }, { authorization: 'bearer first-token' })).status).toBe(200);
  });

  it('leaves /wellknown, /.wellknown, /protocols/:hash and OPTIONS public', async () => {
    expect((await call(server.url, 'GET', '/wellknown')).status).toBe(200);
    expect((await call(server.url, 'GET', '/.wellknown')).status).toBe(200);
    expect((await fetch(`${server.url}/protocols/${METEO_HEX}`)).status).toBe(200);
    expect((await fetch(`${server.url}/`, { method: 'OPTIONS' })).status).toBe(204);
  });
});

describe('rate limit', () => {
  it('answers 429 JSON with Retry-After past the maximum, until the window ends', async () => {
    let now = 1_000_000;
    const options: HttpOptions = { rateLimit: { windowMs: 60_000, max: 3 }, now: () => now, logger: memoryLogger() };
    const server = await startServer(fakeReceiver().receiver, { ...options, port: 0 });
    try {
      for (let index = 0; index < 3; index++) expect((await call(server.url, 'GET', '/health')).status).toBe(200);
      const limited = await call(server.url, 'POST', '/', { body: 1 });
      expect(limited.status).toBe(429);
      expect(limited.json).toEqual(failureOf('Too many requests'));
      expect(limited.headers.get('retry-after')).toBe('60');
      now += 45_000;
      expect((await call(server.url, 'GET', '/health')).headers.get('retry-after')).toBe('15');
      now += 15_000;
      expect((await call(server.url, 'GET', '/health')).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('counts clients apart and keeps its memory bounded', async () => {
    let now = 0;
    const handle = createHandler(fakeReceiver().receiver, { rateLimit: { windowMs: 1000, max: 1 }, now: () => now });
    const get = (remoteAddress: string) => handle({ method: 'GET', path: '/health', headers: {}, body: undefined, remoteAddress });
    expect((await get('a')).status).toBe(200);
    expect((await get('b')).status).toBe(200);
    expect((await get('a')).status).toBe(429);
    // Far more clients than the table holds: old ones are evicted, the limiter keeps working.
    for (let index = 0; index < 25_000; index++) await get(`client-${index}`);
    now += 1000;
    expect((await get('a')).status).toBe(200);
    expect((await get('a')).status).toBe(429);
  });
});

describe('createHandler', () => {
  it('uses publicUrl as the base URL, else the Host header when it is a plain host', async () => {
    const fake = fakeReceiver();
    const request = { method: 'GET', path: '/wellknown', body: undefined };
    await createHandler(fake.receiver, { publicUrl: 'https://agent.example/agora/' })({ ...request, headers: { host: 'evil' } });
    expect(fake.calls.at(-1)?.context?.baseUrl).toBe('https://agent.example/agora');
    await createHandler(fake.receiver)({ ...request, headers: { host: 'localhost:8080' } });
    expect(fake.calls.at(-1)?.context?.baseUrl).toBe('http://localhost:8080');
    await createHandler(fake.receiver)({ ...request, headers: { host: 'evil.example/"><script>' } });
    expect(fake.calls.at(-1)?.context?.baseUrl).toBeUndefined();
    await createHandler(fake.receiver)({ ...request, headers: { host: 'x' }, baseUrl: 'http://h:8080/prefix/' });
    expect(fake.calls.at(-1)?.context?.baseUrl).toBe('http://h:8080/prefix');
    await createHandler(fake.receiver)({ ...request, headers: {}, baseUrl: 'http://evil"><script>/agora' });
    expect(fake.calls.at(-1)?.context?.baseUrl).toBeUndefined();
  });

  it('reads the body only once routing and auth passed', async () => {
    let reads = 0;
    const handle = createHandler(fakeReceiver().receiver, { tokens: ['t'] });
    const loadBody = async () => (reads++, Buffer.from('{"body": 1}'));
    expect((await handle({ method: 'POST', path: '/', headers: {}, body: undefined, loadBody })).status).toBe(401);
    expect((await handle({ method: 'POST', path: '/nope', headers: { authorization: 'Bearer t' }, body: undefined, loadBody })).status).toBe(404);
    expect(reads).toBe(0);
    expect((await handle({ method: 'POST', path: '/', headers: { authorization: 'Bearer t' }, body: undefined, loadBody })).status).toBe(200);
    expect(reads).toBe(1);
  });

  it('does not resolve dot segments or percent-encoded slashes in paths', async () => {
    const handle = createHandler(fakeReceiver().receiver);
    const get = (path: string, method = 'GET') => handle({ method, path, headers: {}, body: Buffer.from('{"body":1}') });
    for (const path of ['/../wellknown', '/wellknown/../x', '/x/../health', '/%2E%2E/health', '/protocols/../wellknown/..']) {
      expect((await get(path)).status, path).toBe(404);
    }
    expect(await get('/conversations/%2E%2E', 'POST')).toMatchObject({ status: 404 });
    expect(await get('/conversations/..', 'POST')).toMatchObject({ status: 404, body: '{"status":"failure","error":"Conversation not found"}' });
    expect(await get('/conversations/a%2F..', 'DELETE')).toMatchObject({ status: 404 });
    expect((await get('/wellknown/')).status).toBe(200);
    expect((await get('')).status).toBe(405);
  });

  it('answers a body over maxBodyBytes handed over already read with 413', async () => {
    const handle = createHandler(fakeReceiver().receiver, { maxBodyBytes: 10 });
    const response = await handle({ method: 'POST', path: '/', headers: {}, body: Buffer.from('{"body": "0123456789"}') });
    expect(response).toMatchObject({ status: 413, body: '{"status":"failure","error":"Request too large"}' });
  });
});
