import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import { clientKey } from '../../src/edge/guard.js';
import { createHandler, type HttpOptions } from '../../src/agora/handler.js';
import { startServer, type RunningServer } from '../../src/agent.js';
import { call, failureOf, fakeReceiver, memoryLogger, METEO_HEX } from './_fixtures.js';
import { ownRedisServer } from '../helpers/redis-server.js';

describe('bearer tokens', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer(fakeReceiver().receiver, {
      port: 0,
      tokens: ['first-token', 's3cret'],
      logger: memoryLogger(),
    });
  });
  afterAll(() => server.close());

  it('refuses a missing or wrong token with 401 JSON', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'Bearer wrong' },
      { authorization: 's3cret' },
      { authorization: 'Basic czNjcmV0' },
      { authorization: 'Bearer s3cret2' },
    ];
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
    expect((await call(server.url, 'POST', '/', { body: 1 }, { authorization: 'bearer first-token' })).status).toBe(
      200,
    );
  });

  it('leaves /wellknown, /.wellknown, /protocols/:hash and OPTIONS public', async () => {
    expect((await call(server.url, 'GET', '/wellknown')).status).toBe(200);
    expect((await call(server.url, 'GET', '/.wellknown')).status).toBe(200);
    expect((await fetch(`${server.url}/protocols/${METEO_HEX}`)).status).toBe(200);
    expect((await fetch(`${server.url}/`, { method: 'OPTIONS' })).status).toBe(204);
  });

  it('leaves the probes /health and /ready public (they carry no data), keeps /metrics behind the token', async () => {
    expect((await call(server.url, 'GET', '/health')).json).toEqual({ status: 'ok' });
    expect((await call(server.url, 'GET', '/ready')).json).toEqual({ status: 'ready' });
    expect((await call(server.url, 'GET', '/metrics')).status).toBe(401);
  });
});

describe('rate limit', () => {
  // rate-limiter-flexible reads Date.now(): only Date is faked, sockets and timers stay real.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(1_000_000);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('answers 429 JSON with Retry-After past the maximum, until the window ends', async () => {
    const options: HttpOptions = { rateLimit: { windowMs: 60_000, max: 3 }, logger: memoryLogger() };
    const server = await startServer(fakeReceiver().receiver, { ...options, port: 0 });
    try {
      for (let index = 0; index < 3; index++) expect((await call(server.url, 'GET', '/health')).status).toBe(200);
      const limited = await call(server.url, 'POST', '/', { body: 1 });
      expect(limited.status).toBe(429);
      expect(limited.json).toEqual(failureOf('Too many requests'));
      expect(limited.headers.get('retry-after')).toBe('60');
      vi.setSystemTime(1_045_000);
      expect((await call(server.url, 'GET', '/health')).headers.get('retry-after')).toBe('15');
      vi.setSystemTime(1_060_000);
      expect((await call(server.url, 'GET', '/health')).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('cannot be reset by others: 10,000 other addresses leave a limited client limited', async () => {
    const handle = createHandler(fakeReceiver().receiver, { rateLimit: { windowMs: 60_000, max: 1 } });
    const get = (remoteAddress: string) =>
      handle({ method: 'GET', path: '/health', headers: {}, body: undefined, remoteAddress });
    expect((await get('10.0.0.1')).status).toBe(200);
    expect((await get('10.0.0.1')).status).toBe(429);
    for (let index = 0; index < 10_000; index++)
      await get(`127.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}`);
    expect((await get('10.0.0.1')).status).toBe(429);
    vi.setSystemTime(1_060_000);
    expect((await get('10.0.0.1')).status).toBe(200);
    expect((await get('10.0.0.1')).status).toBe(429);
  });

  it('counts IPv6 clients per /64, and IPv4-mapped addresses as their IPv4 address', async () => {
    const handle = createHandler(fakeReceiver().receiver, { rateLimit: { windowMs: 60_000, max: 2 } });
    const get = async (remoteAddress: string) =>
      (await handle({ method: 'GET', path: '/health', headers: {}, body: undefined, remoteAddress })).status;
    expect(await get('2001:db8:1:2::1')).toBe(200);
    expect(await get('2001:db8:1:2:ffff:ffff:ffff:ffff')).toBe(200);
    expect(await get('2001:0db8:0001:0002:0:0:0:abcd')).toBe(429);
    expect(await get('2001:db8:1:3::1')).toBe(200);
    expect(await get('::ffff:192.0.2.7')).toBe(200);
    expect(await get('192.0.2.7')).toBe(200);
    expect(await get('192.0.2.7')).toBe(429);
  });

  it('maps addresses to the client they count against', () => {
    expect(clientKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(clientKey('2001:db8:aa:bb:cc::')).toBe('2001:db8:aa:bb::/64');
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
    expect(clientKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(clientKey('::FFFF:10.1.2.3')).toBe('10.1.2.3');
    expect(clientKey('10.1.2.3')).toBe('10.1.2.3');
    expect(clientKey(undefined)).toBe('');
  });
});

describe('rate limit on Redis', () => {
  let redis: Awaited<ReturnType<typeof ownRedisServer>>;
  const clients: Redis[] = [];
  beforeAll(async () => {
    redis = await ownRedisServer();
  });
  afterAll(async () => {
    for (const client of clients) client.disconnect();
    await redis.stop();
  });

  it('shares one count per client between processes, and falls back to memory when Redis is down', async () => {
    const connect = () => {
      const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
      client.on('error', () => undefined);
      clients.push(client);
      return client;
    };
    const prefix = `rl-${Date.now()}:`;
    const [one, two] = [connect(), connect()];
    await Promise.all([one.ping(), two.ping()]);
    const first = createHandler(fakeReceiver().receiver, {
      rateLimit: { windowMs: 60_000, max: 3, redis: one, prefix },
    });
    const second = createHandler(fakeReceiver().receiver, {
      rateLimit: { windowMs: 60_000, max: 3, redis: two, prefix },
    });
    const get = async (handle: typeof first) =>
      (await handle({ method: 'GET', path: '/health', headers: {}, body: undefined, remoteAddress: '198.51.100.9' }))
        .status;
    expect([await get(first), await get(second), await get(first)]).toEqual([200, 200, 200]);
    expect(await get(second)).toBe(429);
    expect(await get(first)).toBe(429);
    await redis.stop();
    // Redis gone: each process counts on its own rather than failing every request.
    expect(await get(first)).toBe(200);
  });
});

describe('createHandler', () => {
  it('uses publicUrl as the base URL, else the Host header when it is a plain host', async () => {
    const fake = fakeReceiver();
    const request = { method: 'GET', path: '/wellknown', body: undefined };
    await createHandler(fake.receiver, { publicUrl: 'https://agent.example/agora/' })({
      ...request,
      headers: { host: '127.0.0.1:9' },
    });
    expect(fake.calls.at(-1)?.context?.baseUrl).toBe('https://agent.example/agora');
    await createHandler(fake.receiver)({ ...request, headers: { host: 'localhost:8080' } });
    expect(fake.calls.at(-1)?.context?.baseUrl).toBe('http://localhost:8080');
    // Only a server that answers any Host (`allowedHosts: ['*']`; a tokenless one refuses this 421) reads it.
    await createHandler(fake.receiver, { allowedHosts: ['*'] })({
      ...request,
      headers: { host: 'evil.example/"><script>' },
    });
    expect(fake.calls.at(-1)?.context?.baseUrl).toBeUndefined();
    await createHandler(fake.receiver)({
      ...request,
      headers: { host: '127.0.0.1' },
      baseUrl: 'http://h:8080/prefix/',
    });
    expect(fake.calls.at(-1)?.context?.baseUrl).toBe('http://h:8080/prefix');
    await createHandler(fake.receiver)({ ...request, headers: {}, baseUrl: 'http://evil"><script>/agora' });
    expect(fake.calls.at(-1)?.context?.baseUrl).toBeUndefined();
  });

  it('reads the body only once routing and auth passed', async () => {
    let reads = 0;
    const handle = createHandler(fakeReceiver().receiver, { tokens: ['t'] });
    const loadBody = async () => (reads++, Buffer.from('{"body": 1}'));
    expect((await handle({ method: 'POST', path: '/', headers: {}, body: undefined, loadBody })).status).toBe(401);
    expect(
      (
        await handle({
          method: 'POST',
          path: '/nope',
          headers: { authorization: 'Bearer t' },
          body: undefined,
          loadBody,
        })
      ).status,
    ).toBe(404);
    expect(reads).toBe(0);
    expect(
      (await handle({ method: 'POST', path: '/', headers: { authorization: 'Bearer t' }, body: undefined, loadBody }))
        .status,
    ).toBe(200);
    expect(reads).toBe(1);
  });

  it('does not resolve dot segments or percent-encoded slashes in paths', async () => {
    const handle = createHandler(fakeReceiver().receiver);
    const get = (path: string, method = 'GET') =>
      handle({ method, path, headers: {}, body: Buffer.from('{"body":1}') });
    for (const path of [
      '/../wellknown',
      '/wellknown/../x',
      '/x/../health',
      '/%2E%2E/health',
      '/protocols/../wellknown/..',
    ]) {
      expect((await get(path)).status, path).toBe(404);
    }
    expect(await get('/conversations/%2E%2E', 'POST')).toMatchObject({ status: 404 });
    expect(await get('/conversations/..', 'POST')).toMatchObject({
      status: 404,
      body: '{"status":"failure","error":"Conversation not found"}',
    });
    expect(await get('/conversations/a%2F..', 'DELETE')).toMatchObject({ status: 404 });
    expect((await get('/wellknown/')).status).toBe(200);
    expect((await get('')).status).toBe(405);
  });

  it('answers a body over maxBodyBytes handed over already read with 413', async () => {
    const handle = createHandler(fakeReceiver().receiver, { maxBodyBytes: 10 });
    const response = await handle({
      method: 'POST',
      path: '/',
      headers: {},
      body: Buffer.from('{"body": "0123456789"}'),
    });
    expect(response).toMatchObject({ status: 413, body: '{"status":"failure","error":"Request too large"}' });
  });
});
