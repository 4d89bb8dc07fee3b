import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agoraMount } from '../../src/agora/handler.js';
import { compose } from '../../src/edge/mount.js';
import { listen, type RunningServer } from '../../src/edge/node.js';
import { call, fakeReceiver, memoryLogger } from '../agora/_fixtures.js';

const QUERY = JSON.stringify({ protocolHash: null, body: 'hello' });

describe('the cross-site rule', () => {
  let server: RunningServer;
  let fake: ReturnType<typeof fakeReceiver>;
  const logger = memoryLogger();

  beforeAll(async () => {
    fake = fakeReceiver();
    server = await listen(compose([agoraMount(fake.receiver)], { logger, corsOrigins: ['https://app.example'] }), {
      port: 0,
      host: '127.0.0.1',
      logger,
    });
  });
  afterAll(() => server.close());

  it('refuses a text/plain POST from a foreign origin (no preflight needed for it), once logged, and answers it without Origin', async () => {
    const before = fake.calls.length;
    const refused = await call(server.url, 'POST', '/', undefined, {
      'content-type': 'text/plain',
      origin: 'http://evil.example',
    });
    expect(refused.status).toBe(403);
    expect(refused.json).toEqual({ status: 'failure', error: 'Cross-site request refused' });
    expect(fake.calls.length).toBe(before);
    expect(logger.lines.filter((line) => line.includes('cross-site'))).toHaveLength(1);
    const plain = await fetch(`${server.url}/`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: QUERY,
    });
    expect(plain.status).toBe(200);
    expect(fake.calls.length).toBe(before + 1);
  });

  it("refuses Sec-Fetch-Site: cross-site and Origin: null, and lets the server's own origin and reads through", async () => {
    const post = (headers: Record<string, string>) =>
      fetch(`${server.url}/`, { method: 'POST', headers: { 'content-type': 'text/plain', ...headers }, body: QUERY });
    expect((await post({ 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await post({ origin: 'null' })).status).toBe(403);
    expect((await post({ origin: server.url })).status).toBe(200);
    expect((await post({ 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    const read = await fetch(`${server.url}/wellknown`, {
      headers: { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' },
    });
    expect(read.status).toBe(200);
  });

  it('lets an allowed origin call, answering its preflight and its request with CORS headers', async () => {
    const preflight = await fetch(`${server.url}/`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    const allowed = await fetch(`${server.url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'https://app.example', 'sec-fetch-site': 'cross-site' },
      body: QUERY,
    });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const other = await fetch(`${server.url}/`, { method: 'OPTIONS', headers: { origin: 'http://evil.example' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('request bodies', () => {
  let server: RunningServer;

  beforeAll(async () => {
    server = await listen(compose([agoraMount(fakeReceiver().receiver)], { maxBodyBytes: 64 * 1024 }), {
      port: 0,
      host: '127.0.0.1',
    });
  });
  afterAll(() => server.close());

  // Sends a 5 MB body as a client that writes it all before it reads (as Python's requests does), and returns what
  // it read: a reset while still writing is what a client sees when the server closes too early.
  function sendLarge(declareLength: boolean): Promise<string> {
    return new Promise((resolve) => {
      const socket = connect(server.port, '127.0.0.1');
      const body = Buffer.alloc(5 * 1024 * 1024, 'a');
      let answer = '';
      socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
      socket.on('error', () => resolve(answer === '' ? 'reset' : answer));
      socket.on('close', () => resolve(answer));
      socket.write(
        `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${declareLength ? `Content-Length: ${body.length}\r\n` : 'Transfer-Encoding: chunked\r\n'}Connection: close\r\n\r\n`,
      );
      if (declareLength) socket.end(body);
      else
        socket.end(Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]));
    });
  }

  it('answers a 5 MB body with a 413 the client can read, 50 times of 50', async () => {
    const answers: string[] = [];
    for (let attempt = 0; attempt < 50; attempt++) answers.push(await sendLarge(attempt % 2 === 0));
    const readable = answers.filter(
      (answer) => answer.startsWith('HTTP/1.1 413') && answer.includes('"Request too large"'),
    );
    expect(
      readable.length,
      answers.find((answer) => !answer.startsWith('HTTP/1.1 413')),
    ).toBe(50);
  }, 60_000);

  it('counts the cap after decompression, and reads a compressed body under it', async () => {
    const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024, ' '));
    expect(bomb.length).toBeLessThan(64 * 1024);
    const refused = await fetch(`${server.url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: bomb,
    });
    expect(refused.status).toBe(413);
    const small = await fetch(`${server.url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(QUERY),
    });
    expect(small.status).toBe(200);
    expect(await small.json()).toEqual({ status: 'success', body: 'hello' });
    const unknown = await fetch(`${server.url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'zstd' },
      body: QUERY,
    });
    expect(unknown.status).toBe(400);
  });
});
