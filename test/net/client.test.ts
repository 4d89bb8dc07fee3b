// src/net/client.ts: the one outbound client's bounds, retries, token and guard, on loopback servers.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpClient } from '../../src/net/client.js';
import { vetHost } from '../../src/net/guard.js';

type Seen = { url: string; method: string; authorization: string | undefined };

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** A loopback server on port 0 that records what it was asked. */
async function serve(handler: (request: IncomingMessage, response: ServerResponse) => void) {
  const seen: Seen[] = [];
  const server = createServer((request, response) => {
    seen.push({ url: request.url ?? '', method: request.method ?? '', authorization: request.headers.authorization });
    response.on('error', () => undefined);
    handler(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const json = (response: ServerResponse, status: number, body: unknown) =>
  void response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

describe('HttpClient', () => {
  it('ends an exchange the peer never answers with TIMEOUT, naming the request and its bound', async () => {
    const silent = await serve(() => undefined);
    const failure = new HttpClient({ timeoutMs: 50 }).request('GET', `${silent.url}/slow`);
    await expect(failure).rejects.toMatchObject({
      code: 'TIMEOUT',
      message: `GET ${silent.url}/slow: no answer within 50 ms`,
    });
  });

  it('refuses a reply past its cap, declared or streamed', async () => {
    const big = await serve((request, response) => {
      if (request.url === '/declared') return void response.end('x'.repeat(2000));
      response.writeHead(200);
      response.write('x'.repeat(800));
      response.end('y'.repeat(800));
    });
    const client = new HttpClient({ maxReplyBytes: 1000 });
    for (const path of ['/declared', '/streamed'])
      await expect(client.request('GET', `${big.url}${path}`)).rejects.toMatchObject({
        code: 'PEER_FAILURE',
        message: `GET ${big.url}${path}: reply larger than 1000 bytes`,
      });
    expect((await client.request('GET', `${big.url}/declared`, { maxBytes: 2000 })).bytes.length).toBe(2000);
  });

  it('tries a safe request again after a gateway error, never a POST unless marked idempotent', async () => {
    let calls = 0;
    const flaky = await serve((_request, response) =>
      ++calls % 2 === 1 ? json(response, 503, { error: 'busy' }) : json(response, 200, { ok: true }),
    );
    const client = new HttpClient({ retries: 2 });
    expect((await client.request('GET', `${flaky.url}/a`)).status).toBe(200);
    expect(calls).toBe(2);
    calls = 0;
    expect((await client.request('POST', `${flaky.url}/b`, { json: {} })).status).toBe(503);
    expect(calls).toBe(1);
    calls = 0;
    expect((await client.request('POST', `${flaky.url}/c`, { json: {}, idempotent: true })).status).toBe(200);
    expect(calls).toBe(2);
  });

  it('tries a GET again when the connection fails, and says so when it keeps failing', async () => {
    const closed = await serve(() => undefined);
    await closers.pop()!();
    await expect(new HttpClient({ retries: 1 }).request('GET', `${closed.url}/x`)).rejects.toMatchObject({
      code: 'PEER_FAILURE',
      message: `GET ${closed.url}/x: connection refused`,
    });
  });

  it('sends the token to its origin only: never after a redirect to another origin', async () => {
    const other = await serve((_request, response) => json(response, 200, { at: 'other' }));
    const home = await serve((request, response) =>
      request.url === '/away'
        ? void response.writeHead(302, { location: `${other.url}/landing` }).end()
        : request.url === '/here'
          ? void response.writeHead(302, { location: '/landing' }).end()
          : json(response, 200, { at: 'home' }),
    );
    const client = new HttpClient({ token: 's3cret', headers: { 'x-trace': '1' } });
    expect(await client.getJson(`${home.url}/away`)).toEqual({ at: 'other' });
    expect(home.seen.at(-1)!.authorization).toBe('Bearer s3cret');
    expect(other.seen.at(-1)!.authorization).toBeUndefined();

    await client.getJson(`${home.url}/here`);
    expect(home.seen.slice(-2).map((seen) => seen.authorization)).toEqual(['Bearer s3cret', 'Bearer s3cret']);

    // A token that belongs to one origin is not sent to another, even when asked directly.
    const pinned = new HttpClient({ token: 's3cret', tokenOrigin: home.url });
    await pinned.getJson(`${other.url}/direct`);
    expect(other.seen.at(-1)!.authorization).toBeUndefined();
    // A caller's own authorization header does not follow a redirect elsewhere either.
    await new HttpClient().getJson(`${home.url}/away`, { headers: { authorization: 'Basic abc' } });
    expect(other.seen.at(-1)!.authorization).toBeUndefined();
  });

  it('hands a POST its redirect instead of following it', async () => {
    const mover = await serve((_request, response) => void response.writeHead(307, { location: '/elsewhere' }).end());
    const reply = await new HttpClient().request('POST', `${mover.url}/`, { json: { a: 1 } });
    expect(reply.status).toBe(307);
    expect(mover.seen.map((seen) => seen.url)).toEqual(['/']);
  });

  it('vets every hop with the guard: a redirect to a host it refuses is never connected to', async () => {
    const home = await serve((request, response) =>
      request.url === '/hop'
        ? void response.writeHead(302, { location: `http://nowhere.test:1/x` }).end()
        : json(response, 200, {}),
    );
    const port = new URL(home.url).port;
    const asked: string[] = [];
    const lookup = async (hostname: string) => {
      asked.push(hostname);
      return hostname === 'first.test' ? [{ address: '127.0.0.1', family: 4 as const }] : [];
    };
    const client = new HttpClient({ guard: { allowPrivateAddresses: true, lookup } });
    await expect(client.request('GET', `http://first.test:${port}/hop`)).rejects.toMatchObject({
      code: 'PEER_FAILURE',
      message: `GET http://first.test:${port}/hop: nowhere.test resolves to no address`,
    });
    expect(asked).toEqual(['first.test', 'nowhere.test']);
    expect(home.seen.map((seen) => seen.url)).toEqual(['/hop']);

    const guarded = new HttpClient({ guard: { setting: 'allowPrivateSources' } });
    const refusal = '127.0.0.1 is a loopback, private, link-local, reserved or metadata address';
    await expect(guarded.request('GET', `${home.url}/hop`)).rejects.toMatchObject({
      message: `GET ${home.url}/hop: ${refusal} (allowPrivateSources is off)`,
    });
    expect(home.seen).toHaveLength(1);
  });

  it('words every failure one way: the request, then what went wrong, or as the caller words it', async () => {
    const gone = await serve((_request, response) => json(response, 404, { error: 'secret text' }));
    await expect(new HttpClient().getJson(`${gone.url}/missing`)).rejects.toThrow(
      new RegExp(`^GET ${gone.url}/missing: HTTP 404$`),
    );
    const html = await serve((_request, response) => void response.end('<html>hi</html>'));
    await expect(new HttpClient().getJson(`${html.url}/`)).rejects.toThrow(`GET ${html.url}/: reply not JSON: <html>`);
    const worded = new HttpClient({ timeoutMs: 50, describe: (reason, at) => `agent at ${at.url}: ${reason}` });
    const silent = await serve(() => undefined);
    await expect(worded.request('GET', `${silent.url}/`)).rejects.toThrow(
      `agent at ${silent.url}/: no answer within 50 ms`,
    );
  });
});

describe('vetHost', () => {
  it('refuses a forbidden literal, and a name with any forbidden answer', async () => {
    await expect(vetHost('[::1]')).rejects.toThrow(/^::1 is a loopback/);
    const lookup = async () => [
      { address: '8.8.8.8', family: 4 as const },
      { address: '10.0.0.1', family: 4 as const },
    ];
    await expect(vetHost('mixed.test', { lookup })).rejects.toThrow('mixed.test resolves to 10.0.0.1, which is');
    expect(await vetHost('mixed.test', { lookup, allowPrivateAddresses: true })).toEqual({
      address: '8.8.8.8',
      family: 4,
    });
  });
});
