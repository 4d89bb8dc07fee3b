// The transport's parts the peer clients add: GETs tried again where safe, and a bounded fetch for a peer's own SDK.
import { createServer } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { boundedFetch, getJson, PeerTransport } from '../../src/sender/transport.js';

describe('getJson and boundedFetch', () => {
  let calls = 0;
  const server = createServer((request, response) => {
    calls += 1;
    if (request.url === '/flaky' && calls % 3 !== 0) return void response.writeHead(503).end();
    if (request.url === '/stream') {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(`data: ${'x'.repeat(5000)}\n\n`);
      response.write(`data: ${'y'.repeat(5000)}\n\n`);
      return;
    }
    if (request.url === '/stall')
      return void response.writeHead(200, { 'content-type': 'text/event-stream' }).write(': open\n\n');
    if (request.url === '/gone') return void response.writeHead(404).end('{"error":"secret text"}');
    response
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ ok: true, authorization: request.headers.authorization ?? null }));
  });
  const url = new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as { port: number }).port}`)),
  );
  afterAll(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('tries a GET again after a 503, and names the URL and status of a refusal without its text', async () => {
    calls = 0;
    expect(await getJson(new PeerTransport(), `${await url}/flaky`)).toMatchObject({ ok: true });
    expect(calls).toBe(3);
    await expect(getJson(new PeerTransport(), `${await url}/gone`)).rejects.toThrow(
      new RegExp(`^GET ${await url}/gone: HTTP 404$`),
    );
  });

  it('sends the token, caps an event stream, and bounds the wait between its pieces', async () => {
    const bounded = boundedFetch({ token: 't0k', timeoutMs: 300, maxReplyBytes: 8000 });
    expect(await (await bounded(`${await url}/`)).json()).toEqual({ ok: true, authorization: 'Bearer t0k' });
    await expect((await bounded(`${await url}/stream`)).text()).rejects.toThrow(
      /GET http:\/\/127\.0\.0\.1:\d+\/stream: stream larger than 8000 bytes/,
    );
    await expect((await bounded(`${await url}/stall`)).text()).rejects.toThrow(
      /GET http:\/\/127\.0\.0\.1:\d+\/stall: no answer within 300 ms/,
    );
  });
});
