// The hub's HTTP API against hostile requests: any method, path, query and body gets a JSON failure or an answer,
// never a 5xx of its own, never an internal error logged; afterwards every listing still answers. Request targets
// URL parsers refuse (`//`) over HTTP and WebSocket upgrades.
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { HubClient } from '../../src/hub/client.js';
import { compose } from '../../src/edge/mount.js';
import { SocketRouter } from '../../src/edge/sockets.js';
import { hubMount } from '../../src/hub/http.js';
import { Hub } from '../../src/hub/hub.js';
import { roomsMount } from '../../src/hub/rooms/http.js';
import type { Rooms } from '../../src/hub/rooms/rooms.js';
import { startHub } from '../../src/hub/server.js';
import { hashText } from '../../src/protocol/document.js';

// FUZZ_RUNS=5000 npx vitest run test/hub/fuzz.test.ts for a deeper search.
const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const DOCUMENT = '---\nname: Weather\ndescription: Forecasts.\nmultiround: false\n---\nSend a city.\n';

// Private agents refused (the default), so nothing registered is ever fetched: no network beyond loopback.
const hub = new Hub({ checkIntervalMs: 3_600_000 });
afterAll(() => hub.close());
const errors: string[] = [];
const edge = compose([hubMount(hub)], { logger: { warn() {}, error: (line: string) => errors.push(line) } });
/** The hub's API in process, as the fuzz cases call it. */
async function handle(request: {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: Buffer;
  remoteAddress?: string;
}) {
  const edgeRequest = {
    method: request.method,
    path: request.url,
    headers: request.headers,
    body: request.body,
    remoteAddress: request.remoteAddress,
  };
  const response = await edge.handle(edgeRequest).catch((error: unknown) => edge.failure(edgeRequest, error));
  return { ...response, body: String(response.body) };
}

const segment = fc.oneof(
  fc.constantFrom(
    'health',
    'metrics',
    'agents',
    'protocols',
    'route',
    'runs',
    'sync',
    hashText(DOCUMENT),
    'run-1',
    '%',
    '%E0%A4%A',
    '..',
    '%2F',
  ),
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
);
const query = fc.oneof(
  fc.constant(''),
  fc.constantFrom(
    '?q=weather',
    '?goal=forecast',
    '?goal=',
    '?limit=-1',
    '?limit=1e9',
    '?limit=abc',
    '?all=true',
    '?protocol=%zz',
    '?handoff=x',
  ),
  fc.string({ maxLength: 20 }).map((text) => `?q=${encodeURIComponent(text)}`),
);
const run = fc.record(
  {
    id: fc.constantFrom('run-1', 'bad id', ''),
    owner: fc.string({ maxLength: 8 }),
    status: fc.constantFrom('running', 'done', 'failed', 'odd'),
    steps: fc.oneof(fc.constant([]), fc.jsonValue({ maxDepth: 2 })),
    updatedAt: fc.oneof(fc.integer(), fc.jsonValue({ maxDepth: 1 })),
  },
  { requiredKeys: [] },
);
const body = fc.oneof(
  fc.record(
    {
      url: fc.constantFrom(
        'http://127.0.0.1:1/',
        'http://10.0.0.1/',
        'http://[::1]:1',
        'ftp://x',
        'not a url',
        '',
        'http://169.254.169.254/',
      ),
      name: fc.string({ maxLength: 10 }),
    },
    { requiredKeys: [] },
  ),
  fc.record(
    {
      hash: fc.constantFrom(hashText(DOCUMENT), 'a'.repeat(40), 'zz', ''),
      text: fc.constantFrom(DOCUMENT, '---\nname: [\n---\n', '', 'x'.repeat(70_000)),
    },
    { requiredKeys: [] },
  ),
  fc.record({ run, leaseMs: fc.oneof(fc.integer(), fc.double()), force: fc.boolean() }, { requiredKeys: [] }),
  fc.jsonValue({ maxDepth: 3 }),
);
const bytes = fc.oneof(
  body.map((value) => Buffer.from(JSON.stringify(value) ?? '')),
  fc.uint8Array({ maxLength: 64 }).map((array) => Buffer.from(array)),
);

describe('hub HTTP API under hostile input', () => {
  it('answers every request with JSON or its text, never 5xx of its own, and stays whole', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'),
        fc.array(segment, { minLength: 1, maxLength: 3 }),
        query,
        bytes,
        async (method, segments, search, raw) => {
          const response = await handle({
            method,
            url: `/${segments.join('/')}${search}`,
            headers: {},
            body: raw,
            remoteAddress: '127.0.0.1',
          });
          expect([500, 503, 504]).not.toContain(response.status);
          if (response.headers['content-type']?.startsWith('application/json'))
            expect(() => JSON.parse(response.body)).not.toThrow();
        },
      ),
      { numRuns: RUNS },
    );
    expect(errors).toEqual([]);
    for (const url of ['/agents?all=true', '/protocols', '/runs?all=true', '/metrics', '/health']) {
      expect((await handle({ method: 'GET', url, headers: {} })).status).toBe(200);
    }
  });
});

/**
 * The status line a raw request gets, or `closed` when the connection ends without one. The request is written
 * without closing our side (node:http drops the answer to a client that half-closes); the hub closes after answering.
 */
function statusLine(port: number, request: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => socket.destroy(), 5000);
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received.split('\r\n')[0] || 'closed');
    });
    socket.on('error', () => {});
    socket.write(request);
  });
}

describe('hub request targets and upgrade sockets', () => {
  it('answers targets a URL parser refuses or rewrites (//, //@, http://[/, /rooms/%2e%2e) with 4xx, over HTTP and WebSocket upgrades alike, and lives on', async () => {
    const lines: string[] = [];
    const running = await startHub({
      port: 0,
      logger: { info() {}, warn() {}, error: (line: string) => lines.push(line) },
    });
    try {
      for (const target of [
        '//',
        '//?q=x',
        '//@',
        '///rooms',
        'http://[/',
        '/rooms//x/ws',
        '/rooms/%2e%2e',
        '/rooms/..',
      ]) {
        const plain = await statusLine(
          running.port,
          `GET ${target} HTTP/1.1\r\nHost: hub\r\nConnection: close\r\n\r\n`,
        );
        expect(plain).toMatch(/^HTTP\/1\.1 4\d\d /);
        // Before the fix an upgrade to `//` threw in the 'upgrade' listener, which ends the process.
        const upgrade = await statusLine(
          running.port,
          `GET ${target} HTTP/1.1\r\nHost: hub\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
        );
        expect(upgrade).toMatch(/^HTTP\/1\.1 4\d\d /);
      }
      expect((await fetch(`${running.url}/health`)).status).toBe(200);
      expect(lines).toEqual([]);
    } finally {
      await running.close();
    }
  });

  it('keeps an error listener on every upgrade socket it answers, so a client resetting the connection cannot end the process', async () => {
    // node:http takes its own listener off before emitting 'upgrade'; an 'error' with none throws (and in a server,
    // ends the process). A socket double makes the reset happen at the worst moment, every time.
    for (const rooms of [undefined, false] as const) {
      const running = await startHub({
        port: 0,
        logger: { info() {}, warn() {}, error() {} },
        ...(rooms === false ? { rooms } : {}),
      });
      try {
        for (const url of ['/rooms/abc/ws', '/elsewhere', '//']) {
          const socket = new PassThrough();
          const request = {
            url,
            method: 'GET',
            headers: { upgrade: 'websocket', connection: 'Upgrade' },
            socket: { remoteAddress: '127.0.0.1' },
          } as unknown as IncomingMessage;
          running.server.emit('upgrade', request, socket, Buffer.alloc(0));
          expect(() =>
            socket.emit('error', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })),
          ).not.toThrow();
          // And once the room lookup has answered (the refusal is written after it).
          await new Promise((resolve) => setTimeout(resolve, 20));
          expect(() => socket.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }))).not.toThrow();
        }
      } finally {
        await running.close();
      }
    }
  });
});

describe('room sockets while the room store is down', () => {
  it('refuses the upgrade with 503 when the store cannot be read, rather than leave a rejection that ends the process', async () => {
    const server = createHttpServer();
    const down = { get: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6379')) } as unknown as Rooms;
    const sockets = new SocketRouter(compose([roomsMount(down)]));
    server.on('upgrade', sockets.upgrade);
    const stop = () => sockets.close();
    try {
      const socket = new PassThrough();
      const written: string[] = [];
      socket.on('data', (chunk: Buffer) => written.push(chunk.toString()));
      server.emit(
        'upgrade',
        {
          url: '/rooms/abc/ws',
          method: 'GET',
          headers: {},
          socket: { remoteAddress: '127.0.0.1' },
        } as unknown as IncomingMessage,
        socket,
        Buffer.alloc(0),
      );
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(written.join('')).toMatch(/^HTTP\/1\.1 503 /);
    } finally {
      stop();
    }
  });
});

describe('HubClient against a broken hub', () => {
  it('fails with PEER_FAILURE on a reply cut short or declared too large, never a bare TypeError', async () => {
    const replies = [
      'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"agents":',
      'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 900000000\r\n\r\n{',
    ];
    let next = 0;
    const server = createTcpServer((socket) => {
      socket.on('error', () => {});
      socket.once('data', () => socket.end(replies[next++ % replies.length]!));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const client = new HubClient({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        timeoutMs: 2000,
      });
      await expect(client.agents()).rejects.toMatchObject({ name: 'AgoraError', code: 'PEER_FAILURE' });
      await expect(client.agents()).rejects.toMatchObject({
        name: 'AgoraError',
        code: 'PEER_FAILURE',
        message: expect.stringContaining('larger than'),
      });
    } finally {
      server.close();
    }
  });
});
