import { connect } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgoraError, type AgoraErrorCode } from '../../src/errors.js';
import { createHandler } from '../../src/agora/handler.js';
import type { EdgeRequest as CoreRequest } from '../../src/edge/request.js';
import type { EdgeResponse as CoreResponse } from '../../src/edge/response.js';
import { startServer, type RunningServer } from '../../src/agent.js';
import type { ReceiverApi } from '../../src/receiver.js';

const METEO = '---\nname: Météo\ndescription: x\nmultiround: false\n---\nè\n';
const METEO_HEX = 'f827eb4b0c00d23021ebb9aed5a89ae3aeb4f92b';
const METEO_BASE64 = '+CfrSwwA0jAh67mu1aia4660+Ss=';

// Every code the receiver may throw at the edge that is not a server fault.
const CLIENT_CODES: AgoraErrorCode[] = [
  'UNSUPPORTED_PROTOCOL',
  'PROTOCOL_CHANGED',
  'CONVERSATION_EXPIRED',
  'CONVERSATION_NOT_FOUND',
  'NATURAL_LANGUAGE_UNSUPPORTED',
  'ROUTINE_FAILED',
  'LLM_UNAVAILABLE',
  'TOO_MANY_CONVERSATIONS',
];

// Throws only AgoraErrors, so any 5xx would be the edge's own fault.
const steer = (body: unknown) => {
  if (
    typeof body === 'object' &&
    body !== null &&
    'fail' in body &&
    CLIENT_CODES.includes(body.fail as AgoraErrorCode)
  ) {
    throw new AgoraError(body.fail as AgoraErrorCode);
  }
};
const receiver: ReceiverApi = {
  async query(request) {
    steer(request.body);
    return { status: 'success', body: request.body };
  },
  async followUp(id, request) {
    if (id.startsWith('x')) throw new AgoraError('CONVERSATION_NOT_FOUND');
    steer(request.body);
    return { status: 'success', body: request.body, conversationId: id, conversationExpires: 1_900_000_000 };
  },
  async end(id) {
    if (id.startsWith('x')) throw new AgoraError('CONVERSATION_EXPIRED');
  },
  async wellknown(context) {
    return { [METEO_HEX]: [`${context?.baseUrl ?? ''}/protocols/${METEO_HEX}`] };
  },
  async document(hash) {
    return hash === METEO_HEX ? METEO : undefined;
  },
  async metrics() {
    return 'agora_queries_total 1\n';
  },
  capabilities: {},
};

const silent = { error: () => {}, warn: () => {} };
// FUZZ_RUNS=5000 npx vitest run test/http-fuzz.test.ts for a deeper search.
const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

const knownPaths = [
  '/',
  '',
  '/wellknown',
  '/.wellknown',
  '/wellknown/',
  '/health',
  '/metrics',
  `/protocols/${METEO_HEX}`,
  `/protocols/${METEO_HEX.toUpperCase()}`,
  `/protocols/${encodeURIComponent(METEO_BASE64)}`,
  `/protocols/${METEO_BASE64}`,
  '/protocols/%',
  '/protocols/%E0%A4%A',
  '/conversations/abc',
  '/conversations/xyz',
  '/conversations/..',
  '/conversations/%2E%2E',
  '/../wellknown',
  '/wellknown/../metrics',
  '/?a=b',
  '/conversations/abc?x=%',
];
const segment = fc.oneof(
  fc.constantFrom(
    '',
    '.',
    '..',
    '%',
    '%2F',
    '%2e%2E',
    '%zz',
    '%00',
    'wellknown',
    '.wellknown',
    'protocols',
    'conversations',
    'health',
    METEO_HEX,
    METEO_BASE64,
  ),
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 10 }),
  fc.string({ unit: 'binary', maxLength: 10 }),
  fc.stringMatching(/^[A-Za-z0-9_-]{1,200}$/),
);
// Weighted towards requests that get past the parser and the router, where the interesting code is.
const pathArbitrary = fc.oneof(
  { arbitrary: fc.constantFrom(...knownPaths), weight: 6 },
  { arbitrary: fc.array(segment, { maxLength: 6 }).map((segments) => `/${segments.join('/')}`), weight: 2 },
  {
    arbitrary: fc
      .tuple(fc.constantFrom('/conversations/', '/protocols/', '/'), fc.integer({ min: 100, max: 12_000 }))
      .map(([prefix, length]) => prefix + 'a'.repeat(length)),
    weight: 1,
  },
  { arbitrary: fc.string({ maxLength: 50 }), weight: 1 },
);
const methodArbitrary = fc.oneof(
  {
    arbitrary: fc.constantFrom(
      'GET',
      'POST',
      'POST',
      'POST',
      'DELETE',
      'PUT',
      'PATCH',
      'HEAD',
      'OPTIONS',
      'TRACE',
      'get',
    ),
    weight: 6,
  },
  { arbitrary: fc.string({ maxLength: 8 }), weight: 1 },
);
const anyJson = fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constantFrom(null, '', 0, true, [], {}));
const requestObject = fc.record(
  { protocolHash: anyJson, protocolSources: anyJson, body: anyJson, multiround: anyJson, status: anyJson },
  { requiredKeys: [] },
);
const jsonText = (value: unknown) => JSON.stringify(value) ?? '';
const bodyArbitrary = fc.oneof(
  fc.constant(undefined),
  fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
  fc.string({ maxLength: 300 }).map((text) => Buffer.from(text)),
  fc.jsonValue().map((value) => Buffer.from(jsonText(value))),
  { arbitrary: requestObject.map((value) => Buffer.from(jsonText(value))), weight: 4 },
  {
    arbitrary: fc.record({ body: anyJson }, { requiredKeys: ['body'] }).map((value) => Buffer.from(jsonText(value))),
    weight: 3,
  },
  {
    arbitrary: fc
      .record({ body: fc.record({ fail: fc.constantFrom(...CLIENT_CODES, 'INTERNAL', 'nope') }) })
      .map((value) => Buffer.from(jsonText(value))),
    weight: 2,
  },
  fc.integer({ min: 0, max: 3000 }).map((depth) => Buffer.from(`{"body":${'['.repeat(depth)}${']'.repeat(depth)}}`)),
  fc.integer({ min: 0, max: 3000 }).map((depth) => Buffer.from(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`)),
  fc.integer({ min: 0, max: 200 }).map((depth) => Buffer.from(`{"body": "${'\\"['.repeat(depth)}"}`)),
);
const headerName = fc.oneof(
  {
    arbitrary: fc.constantFrom(
      'authorization',
      'authorization',
      'content-type',
      'host',
      'accept',
      'x-forwarded-for',
      'expect',
      'cookie',
    ),
    weight: 5,
  },
  { arbitrary: fc.string({ minLength: 1, maxLength: 12 }), weight: 1 },
);
const headerValue = fc.oneof(
  fc.constantFrom(
    'Bearer token-1',
    'Bearer wrong',
    'bearer',
    'application/json',
    'text/plain',
    'localhost:3000',
    'evil"/>',
    '100-continue',
  ),
  fc.string({ maxLength: 40 }),
);
const headersArbitrary = fc.dictionary(headerName, fc.oneof(headerValue, fc.array(headerValue, { maxLength: 3 })), {
  maxKeys: 5,
});

// Half chaos, half requests shaped like real ones (a route's own method and a plausible body), so most runs get
// past parser, router and auth into validation and the receiver.
const conversationId = fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{1,130}$/), segment);
const shapedRequest = fc.oneof(
  fc.record({ method: fc.constant('POST'), path: fc.constantFrom('/', '', '/?x=1'), body: bodyArbitrary }),
  fc.record({
    method: fc.constant('POST'),
    path: conversationId.map((id) => `/conversations/${id}`),
    body: bodyArbitrary,
  }),
  fc.record({
    method: fc.constant('DELETE'),
    path: conversationId.map((id) => `/conversations/${id}`),
    body: bodyArbitrary,
  }),
  fc.record({
    method: fc.constantFrom('GET', 'HEAD'),
    path: fc.constantFrom(...knownPaths),
    body: fc.constant(undefined),
  }),
);
const requestArbitrary = fc
  .tuple(
    fc.oneof(shapedRequest, fc.record({ method: methodArbitrary, path: pathArbitrary, body: bodyArbitrary })),
    headersArbitrary,
    fc.option(fc.constant('Bearer token-1'), { freq: 2, nil: undefined }),
  )
  .map(([shape, headers, authorization]) => ({
    ...shape,
    headers: authorization === undefined ? headers : { ...headers, authorization },
  }));

function expectWellFormed(
  method: string,
  response: { status: number; contentType: string | undefined; body: string },
): void {
  expect(response.status).toBeGreaterThanOrEqual(200);
  expect(response.status).toBeLessThan(500);
  const hasBody = method !== 'HEAD' && response.status !== 204;
  if (response.status >= 300 && hasBody) {
    expect(response.contentType).toBe('application/json; charset=utf-8');
    const parsed = JSON.parse(response.body) as unknown;
    expect(parsed).toEqual({ status: 'failure', error: expect.any(String) });
  }
  if (hasBody && response.contentType?.startsWith('application/json'))
    expect(() => JSON.parse(response.body)).not.toThrow();
}

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => void unhandled.push(reason);
beforeAll(() => void process.on('unhandledRejection', onUnhandled));
afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
  expect(unhandled).toEqual([]);
});

describe('createHandler under arbitrary requests', () => {
  const plain = createHandler(receiver, { logger: silent, maxBodyBytes: 8 * 1024 });
  const guarded = createHandler(receiver, {
    logger: silent,
    tokens: ['token-1'],
    rateLimit: { windowMs: 1000, max: 50 },
  });

  it('never answers 5xx, and every error is a JSON failure', async () => {
    await fc.assert(
      fc.asyncProperty(
        requestArbitrary,
        fc.record({
          guarded: fc.boolean(),
          lazy: fc.boolean(),
          remoteAddress: fc.option(fc.constantFrom('127.0.0.1', '::1', '10.0.0.1'), { nil: undefined }),
        }),
        async (shape, options) => {
          const input = { ...shape, ...options };
          const request: CoreRequest = {
            method: input.method,
            path: input.path,
            headers: input.headers,
            body: input.body,
          };
          if (input.remoteAddress !== undefined) request.remoteAddress = input.remoteAddress;
          if (input.lazy && input.body !== undefined) {
            const body = input.body;
            request.body = undefined;
            request.loadBody = async () => body;
          }
          const response: CoreResponse = await (input.guarded ? guarded : plain)(request);
          if (input.method !== 'HEAD' && response.status !== 204) {
            expect(response.headers['content-length']).toBe(String(Buffer.byteLength(response.body)));
          }
          expectWellFormed(input.method, {
            status: response.status,
            contentType: response.headers['content-type'],
            body: String(response.body),
          });
        },
      ),
      { numRuns: RUNS },
    );
  });
});

type RawResponse = { status: number; contentType: string | undefined; body: string };

// A raw socket, so that requests fetch would refuse (bad methods, odd targets, unicode) reach the server.
function rawRequest(port: number, bytes: Buffer): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('no answer within 5 s'));
    }, 5000);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      let data = Buffer.concat(chunks);
      for (;;) {
        const end = data.indexOf('\r\n\r\n');
        if (end === -1)
          return reject(new Error(`no complete response: ${JSON.stringify(data.toString('latin1').slice(0, 200))}`));
        const head = data.subarray(0, end).toString('latin1');
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
        // Skip interim responses (100 Continue).
        if (status >= 100 && status < 200) {
          data = data.subarray(end + 4);
          continue;
        }
        const contentType = /\r\ncontent-type: ([^\r]*)/i.exec(head)?.[1];
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        return resolve({ status, contentType, body: data.subarray(end + 4, end + 4 + length).toString('utf8') });
      }
    });
    socket.end(bytes);
  });
}

const noNewlines = (text: string) => text.replace(/[\r\n]/g, ' ');

describe('the node server under arbitrary requests', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer(receiver, {
      port: 0,
      logger: silent,
      maxBodyBytes: 8 * 1024,
      headersTimeoutMs: 2000,
      requestTimeoutMs: 3000,
    });
  });
  afterAll(() => server.close());

  it('never answers 5xx, always answers, and every error is a JSON failure', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          requestArbitrary,
          fc.record({
            method: fc.constant('CONNECT'),
            path: pathArbitrary,
            body: bodyArbitrary,
            headers: headersArbitrary,
          }),
        ),
        fc.boolean(),
        async (input, withHost) => {
          const body = input.body ?? Buffer.alloc(0);
          let head = `${noNewlines(input.method)} ${noNewlines(input.path) || '/'} HTTP/1.1\r\n`;
          if (withHost) head += 'Host: 127.0.0.1\r\n';
          for (const [name, value] of Object.entries(input.headers)) {
            // Framing headers of our own making would only test our test (a body that never comes, say).
            if (/^(content-length|transfer-encoding|connection|host)$/i.test(name.trim())) continue;
            for (const one of Array.isArray(value) ? value : [value])
              head += `${noNewlines(name)}: ${noNewlines(one)}\r\n`;
          }
          head += `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
          const response = await rawRequest(server.port, Buffer.concat([Buffer.from(head, 'utf8'), body]));
          expectWellFormed(input.method, response);
        },
      ),
      { numRuns: RUNS },
    );
    // Still healthy afterwards.
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });
});
