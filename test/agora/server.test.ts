import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReceiverApi } from '../../src/receiver.js';
import { startServer, type RunningServer } from '../../src/agent.js';
import { hashText } from '../../src/protocol/document.js';
import {
  call,
  CRLF_DOCUMENT,
  failureOf,
  fakeReceiver,
  memoryLogger,
  METEO,
  METEO_BASE64,
  METEO_HEX,
} from './_fixtures.js';

describe('node server', () => {
  const fake = fakeReceiver();
  const logger = memoryLogger();
  let server: RunningServer;
  let base: string;

  beforeAll(async () => {
    server = await startServer(fake.receiver, { port: 0, logger });
    base = server.url;
  });
  afterAll(() => server.close());

  it('answers a query and a multiround start', async () => {
    expect((await call(base, 'POST', '/', { body: 'hi' })).json).toEqual({ status: 'success', body: 'hi' });
    const multi = await call(base, 'POST', '/', {
      protocolHash: null,
      protocolSources: [],
      body: { city: 'Paris' },
      multiround: true,
    });
    expect(multi.status).toBe(200);
    expect(multi.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(multi.json).toEqual({
      status: 'success',
      body: { city: 'Paris' },
      conversationId: 'conversation_1',
      conversationExpires: 1_900_000_000,
    });
  });

  it('gives each of many concurrent requests its own answer (responses are written in batches)', async () => {
    const answers = await Promise.all(
      Array.from({ length: 120 }, (_, index) =>
        index % 10 === 9 ? call(base, 'GET', `/nope-${index}`) : call(base, 'POST', '/', { body: `query ${index}` }),
      ),
    );
    answers.forEach((answer, index) => {
      if (index % 10 === 9) expect(answer.status).toBe(404);
      else expect(answer.json).toEqual({ status: 'success', body: `query ${index}` });
    });
  });

  it('passes only the known fields and the context to the receiver', async () => {
    await call(base, 'POST', '/?ignored=1', {
      protocolHash: METEO_BASE64,
      protocolSources: ['data:,x'],
      body: 1,
      extra: true,
    });
    const last = fake.calls.at(-1);
    expect(last?.request).toEqual({ protocolHash: METEO_BASE64, protocolSources: ['data:,x'], body: 1 });
    expect(last?.context?.baseUrl).toBe(`http://${new URL(base).host}`);
    expect(last?.context?.remoteAddress).toMatch(/127\.0\.0\.1/);
    // No signal unless asked for (abortOnDisconnect): the receiver's fast path depends on its absence.
    expect(last?.context?.signal).toBeUndefined();
  });

  it('answers a follow-up, ignoring a repeated hash, multiround and status', async () => {
    const response = await call(base, 'POST', '/conversations/abc_DEF-123', {
      protocolHash: METEO_BASE64,
      protocolSources: [],
      multiround: true,
      status: 'success',
      body: 'next',
    });
    expect(response.json).toEqual({
      status: 'success',
      body: 'next',
      conversationId: 'abc_DEF-123',
      conversationExpires: 1_900_000_300,
    });
    expect(fake.calls.at(-1)).toMatchObject({
      method: 'followUp',
      id: 'abc_DEF-123',
      request: { protocolHash: METEO_BASE64, protocolSources: [], body: 'next' },
    });
  });

  it('ends a conversation with DELETE', async () => {
    const response = await call(base, 'DELETE', '/conversations/abc');
    expect(response.status).toBe(200);
    expect(response.text).toBe('{"status":"success","body":null}');
  });

  it('serves /wellknown, its alias, /health and /metrics', async () => {
    const wellknown = await call(base, 'GET', '/wellknown');
    expect(wellknown.json).toEqual({ [METEO_HEX]: [`http://${new URL(base).host}/protocols/${METEO_HEX}`] });
    expect((await call(base, 'GET', '/.wellknown')).json).toEqual(wellknown.json);
    expect((await call(base, 'GET', '/health')).text).toBe('{"status":"ok"}');
    const metrics = await call(base, 'GET', '/metrics');
    expect(metrics.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(metrics.text).toContain('agora_queries_total 3');
  });

  it.each([
    ['Unsupported protocol', 'UNSUPPORTED_PROTOCOL', 200],
    ['This agent only accepts queries under the protocols listed at /wellknown', 'NATURAL_LANGUAGE_UNSUPPORTED', 200],
    ['Routine failed', 'ROUTINE_FAILED', 200],
    ['LLM unavailable', 'LLM_UNAVAILABLE', 200],
  ] as const)('answers a query failing with "%s" as HTTP %s', async (text, code, status) => {
    const response = await call(base, 'POST', '/', { protocolHash: METEO_HEX, body: { fail: code } });
    expect(response.status).toBe(status);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.json).toEqual(failureOf(text));
  });

  it.each([
    ['Protocol cannot change within a conversation', 'PROTOCOL_CHANGED', 400],
    ['Conversation expired', 'CONVERSATION_EXPIRED', 200],
    ['Conversation not found', 'CONVERSATION_NOT_FOUND', 404],
    ['Routine failed', 'ROUTINE_FAILED', 200],
  ] as const)('answers a follow-up failing with "%s" as HTTP %s', async (text, code, status) => {
    const response = await call(base, 'POST', '/conversations/c1', { body: { fail: code } });
    expect(response.status).toBe(status);
    expect(response.json).toEqual(failureOf(text));
  });

  it('answers an unknown conversation with 404 on follow-up and DELETE', async () => {
    expect(await call(base, 'POST', '/conversations/unknown', { body: 1 })).toMatchObject({
      status: 404,
      json: failureOf('Conversation not found'),
    });
    expect(await call(base, 'DELETE', '/conversations/unknown')).toMatchObject({
      status: 404,
      json: failureOf('Conversation not found'),
    });
  });

  it('refuses malformed conversation ids without calling the receiver', async () => {
    const before = fake.calls.length;
    // (fetch resolves `.`, `..` and `%2E%2E` itself: dot segments are covered by the createHandler tests.)
    for (const id of ['a'.repeat(129), 'a%20b', 'a.b', 'é', 'a/b', 'a%2Fb']) {
      const response = await call(base, 'POST', `/conversations/${id}`, { body: 1 });
      expect(response.status, id).toBe(404);
      expect(response.json, id).toEqual(failureOf('Conversation not found'));
    }
    expect((await call(base, 'DELETE', `/conversations/${'x'.repeat(200)}`)).status).toBe(404);
    expect(fake.calls.length).toBe(before);
    expect((await call(base, 'POST', `/conversations/${'a'.repeat(128)}`, { body: 1 })).status).toBe(200);
  });

  it.each([
    ['not JSON', '{"body": ', 'Request body must be a JSON object'],
    ['empty', '', 'Request body must be a JSON object'],
    ['a JSON array', '[1, 2]', 'Request body must be a JSON object'],
    ['a JSON string', '"hello"', 'Request body must be a JSON object'],
    ['JSON null', 'null', 'Request body must be a JSON object'],
    ['missing body', '{"protocolHash": null}', 'body is required'],
    ['a numeric protocolHash', '{"body": 1, "protocolHash": 42}', 'protocolHash must be a string or null'],
    [
      'a string protocolSources',
      '{"body": 1, "protocolSources": "data:,x"}',
      'protocolSources must be an array of strings or null',
    ],
    [
      'a number among protocolSources',
      '{"body": 1, "protocolSources": ["data:,x", 3]}',
      'protocolSources must hold strings',
    ],
    ['a string multiround', '{"body": 1, "multiround": "yes"}', 'multiround must be a boolean'],
    [
      'deep nesting',
      `{"body": ${'['.repeat(5000)}${']'.repeat(5000)}}`,
      'Request body is nested deeper than 100 levels',
    ],
  ])('answers a query with %s as 400 naming the problem', async (_name, raw, message) => {
    const response = await call(base, 'POST', '/', raw);
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(response.json).toEqual(failureOf(message));
  });

  it('answers a follow-up with wrong types as 400 naming the field', async () => {
    expect((await call(base, 'POST', '/conversations/c1', '{"status": "success"}')).json).toEqual(
      failureOf('body is required'),
    );
    expect((await call(base, 'POST', '/conversations/c1', '{"body": 1, "protocolHash": []}')).json).toEqual(
      failureOf('protocolHash must be a string or null'),
    );
    const sources = await call(base, 'POST', '/conversations/c1', '{"body": 1, "protocolSources": [1]}');
    expect(sources.status).toBe(400);
    expect((sources.json as { error: string }).error).toMatch(/^protocolSources\.0: /);
    expect((await call(base, 'POST', '/conversations/c1', 'not json')).json).toEqual(
      failureOf('Request body must be a JSON object'),
    );
  });

  it('accepts a body sent as text/plain or without a content type, with a BOM', async () => {
    expect((await call(base, 'POST', '/', '{"body": "a"}', { 'content-type': 'text/plain' })).json).toEqual({
      status: 'success',
      body: 'a',
    });
    const response = await fetch(`${base}/`, { method: 'POST', body: new Blob(['\uFEFF{"body": "b"}']) });
    expect(await response.json()).toEqual({ status: 'success', body: 'b' });
  });

  it('answers a 2 MiB body with 413, declared or chunked', async () => {
    const big = JSON.stringify({ body: 'x'.repeat(2 * 1024 * 1024) });
    const declared = await call(base, 'POST', '/', big);
    expect(declared.status).toBe(413);
    expect(declared.json).toEqual(failureOf('Request too large'));
    // The connection is not kept for another request: the rest of the body is never read.
    expect(declared.headers.get('connection')).toBe('close');
    const chunks = (async function* () {
      for (let index = 0; index < 32; index++) yield new TextEncoder().encode('x'.repeat(64 * 1024));
    })();
    const streamed = await fetch(`${base}/`, {
      method: 'POST',
      body: ReadableStream.from(chunks),
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(await streamed.json()).toEqual(failureOf('Request too large'));
    expect(streamed.headers.get('connection')).toBe('close');
    // The server still serves afterwards.
    expect((await call(base, 'GET', '/health')).status).toBe(200);
  });

  it('serves a protocol document by hex, upper-case hex and percent-encoded base64 with its exact bytes', async () => {
    for (const [text, hex] of [
      [METEO, METEO_HEX],
      [CRLF_DOCUMENT, hashText(CRLF_DOCUMENT)],
    ] as const) {
      const base64 = Buffer.from(hex, 'hex').toString('base64');
      for (const hash of [hex, hex.toUpperCase(), encodeURIComponent(base64)]) {
        const response = await fetch(`${base}/protocols/${hash}`);
        expect(response.status, hash).toBe(200);
        expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
        const bytes = Buffer.from(await response.arrayBuffer());
        expect(bytes.equals(Buffer.from(text, 'utf8'))).toBe(true);
        expect(hashText(bytes)).toBe(hex);
      }
    }
    expect(Buffer.from(METEO_HEX, 'hex').toString('base64')).toBe(METEO_BASE64);
  });

  it('answers an unknown or malformed protocol hash with 404 JSON', async () => {
    for (const hash of ['0'.repeat(40), 'not-a-hash', '%E0%A4%A', encodeURIComponent('qvTGHdzF6KLavt4PO0gs2a6pQ00=')]) {
      const response = await call(base, 'GET', `/protocols/${hash}`);
      expect(response.status, hash).toBe(404);
      expect(response.json).toEqual(failureOf('Protocol not found'));
    }
  });

  it('answers a wrong method with 405 and Allow, an unknown path with 404', async () => {
    const wrong = await call(base, 'PUT', '/wellknown', { body: 1 });
    expect(wrong.status).toBe(405);
    expect(wrong.json).toEqual(failureOf('Method not allowed'));
    expect(wrong.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    // GET / is OAP's card (the faces are on by default); PUT / is nobody's, so Agora's 405.
    expect((await call(base, 'GET', '/')).json).toMatchObject({ status: 'ok', agent_id: expect.any(String) });
    expect((await call(base, 'PUT', '/', { body: 1 })).status).toBe(405);
    expect((await call(base, 'GET', '/conversations/abc')).status).toBe(405);
    for (const path of ['/nope', '/protocols', '/conversations/', '/wellknown%2F..%2Fx', '/x/%2E%2E%2Fwellknown']) {
      const response = await call(base, 'GET', path);
      expect(response.status, path).toBe(404);
      expect(response.json).toEqual(failureOf('Not found'));
    }
  });

  it('answers HEAD like GET without a body, and OPTIONS with Allow', async () => {
    const head = await fetch(`${base}/protocols/${METEO_HEX}`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(METEO)));
    expect(await head.text()).toBe('');
    const options = await fetch(`${base}/conversations/abc`, { method: 'OPTIONS' });
    expect(options.status).toBe(204);
    // GET too: a conversation's events are read with GET /conversations/:id/events.
    expect(options.headers.get('allow')).toBe('GET, POST, DELETE, OPTIONS');
  });

  it('answers a plain Error as 500 JSON without leaking it, and logs the details', async () => {
    const response = await call(base, 'POST', '/', { body: { crash: true } });
    expect(response.status).toBe(500);
    const id = response.headers.get('x-request-id');
    expect(id).toMatch(/^[A-Za-z0-9_-]{12}$/);
    expect(response.json).toEqual(failureOf(`Internal error (request ${id})`));
    expect(response.text).not.toContain('secret');
    // The log line carries the same id, so the operator finds what happened.
    expect(
      logger.lines.some(
        (line) =>
          line.startsWith('error') && line.includes(`request ${id}:`) && line.includes('secret database password'),
      ),
    ).toBe(true);
  });

  it('answers an internal AgoraError (a corrupt Redis record) with the fixed text, not its message', async () => {
    const response = await call(base, 'POST', '/', { body: { corrupt: true } });
    expect(response.status).toBe(500);
    expect(response.text).not.toContain('agora:conversation');
    expect(response.json).toEqual(failureOf(`Internal error (request ${response.headers.get('x-request-id')})`));
    expect(logger.lines.some((line) => line.includes('agora:conversation:abc'))).toBe(true);
  });

  it('refuses a body that is not valid UTF-8 with 400', async () => {
    const bytes = Buffer.concat([Buffer.from('{"body":"caf'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    const response = await fetch(`${base}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: bytes,
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual(failureOf('Request body is not valid UTF-8'));
  });

  it('answers a bad request line or a CONNECT with JSON, and stays up', async () => {
    const raw = async (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(server.port, '127.0.0.1');
        let data = '';
        socket.on('data', (chunk) => (data += chunk.toString('latin1')));
        socket.on('close', () => resolve(data));
        socket.on('error', reject);
        socket.write(request);
      });
    const bad = await raw('GET /\u0001 HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(bad).toMatch(/^HTTP\/1\.1 400 /);
    expect(bad.slice(bad.indexOf('\r\n\r\n') + 4)).toBe('{"status":"failure","error":"Bad request"}');
    const tunnel = await raw('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(tunnel).toMatch(/^HTTP\/1\.1 405 [\s\S]*\{"status":"failure","error":"Method not allowed"\}$/);
    const expectation = await raw('POST / HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n{}');
    expect(expectation).toMatch(/^HTTP\/1\.1 417 [\s\S]*\{"status":"failure","error":"Expectation failed"\}$/);
    expect((await call(base, 'GET', '/health')).status).toBe(200);
  });
});

describe('slow clients', () => {
  it('cuts off a client sending its headers slowly, and keeps serving others', async () => {
    const server = await startServer(fakeReceiver().receiver, {
      port: 0,
      headersTimeoutMs: 300,
      logger: memoryLogger(),
    });
    try {
      const socket = connect(server.port, '127.0.0.1');
      let received = '';
      socket.on('data', (chunk) => (received += chunk.toString('latin1')));
      socket.on('error', () => {});
      socket.write('GET /health HTTP/1.1\r\nHost: x\r\n');
      const drip = setInterval(() => socket.writable && socket.write(`X-Slow-${Date.now()}: 1\r\n`), 50);
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));

      // Meanwhile others are served.
      expect((await call(server.url, 'GET', '/health')).status).toBe(200);
      await closed;
      clearInterval(drip);
      // The drip never stops: only the headers timeout can have closed the socket, and it says so.
      expect(received).toMatch(/^HTTP\/1\.1 408 [\s\S]*\{"status":"failure","error":"Request timeout"\}$/);
      expect((await call(server.url, 'GET', '/health')).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('closes gracefully, letting an in-flight request finish', async () => {
    let release: () => void = () => {};
    let entered: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const reached = new Promise<void>((resolve) => (entered = resolve));
    const { receiver } = fakeReceiver();
    const slow: ReceiverApi = {
      ...receiver,
      query: async (request) => {
        entered();
        await gate;
        return { status: 'success', body: request.body };
      },
    };
    const server = await startServer(slow, { port: 0, logger: memoryLogger() });
    await call(server.url, 'GET', '/health'); // leaves an idle keep-alive connection behind
    const inFlight = call(server.url, 'POST', '/', { body: 'slow' });
    await reached;
    const closed = server.close();
    release();
    expect((await inFlight).json).toEqual({ status: 'success', body: 'slow' });
    await closed;
    await expect(fetch(`${server.url}/health`)).rejects.toThrow();
  });
});

describe('client disconnects', () => {
  it('drops a request whose client leaves halfway through its body: no query, no error logged, the server answers on', async () => {
    const logger = memoryLogger();
    const { receiver } = fakeReceiver();
    let queries = 0;
    const counting: ReceiverApi = { ...receiver, query: (...args) => (queries++, receiver.query(...args)) };
    const server = await startServer(counting, { port: 0, logger });
    try {
      const socket = connect(server.port, '127.0.0.1');
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      socket.write(
        'POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"body": "hal',
      );
      // The server has read the half body once /health, on another connection, is answered after it.
      await new Promise((resolve) => setImmediate(resolve));
      socket.destroy();
      await closed;
      expect((await call(server.url, 'GET', '/health')).status).toBe(200);
      // A whole request on a fresh connection is answered as usual.
      expect((await call(server.url, 'POST', '/', { body: 'whole' })).status).toBe(200);
      expect(queries).toBe(1);
      expect(logger.lines).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('aborts the signal the receiver was given when abortOnDisconnect is set, without logging an error', async () => {
    const logger = memoryLogger();
    let aborted: (reason: unknown) => void = () => {};
    let entered: () => void = () => {};
    const sawAbort = new Promise<unknown>((resolve) => (aborted = resolve));
    const reached = new Promise<void>((resolve) => (entered = resolve));
    const { receiver } = fakeReceiver();
    const waiting: ReceiverApi = {
      ...receiver,
      query: (_request, context) =>
        new Promise((_resolve, reject) => {
          entered();
          context?.signal?.addEventListener('abort', () => {
            aborted(context.signal?.reason);
            reject(new Error('aborted by the client'));
          });
        }),
    };
    const server = await startServer(waiting, { port: 0, logger, abortOnDisconnect: true });
    try {
      const controller = new AbortController();
      const pending = fetch(`${server.url}/`, { method: 'POST', body: '{"body": "long"}', signal: controller.signal });
      await reached;
      controller.abort();
      await expect(pending).rejects.toThrow();
      await sawAbort;
      expect((await call(server.url, 'GET', '/health')).status).toBe(200);
      expect(logger.lines).toEqual([]);
    } finally {
      await server.close();
    }
  });
});

describe('request log', () => {
  it('writes one debug line per request (id, method, path, status, ms), and the id of a 500 is the one in its line', async () => {
    const lines: string[] = [];
    const logger = {
      ...memoryLogger(),
      debug: (message: string) => void lines.push(message),
      error: (message: string) => void lines.push(`error ${message}`),
    };
    const server = await startServer(fakeReceiver().receiver, { port: 0, logger });
    try {
      await call(server.url, 'GET', '/health');
      const crashed = await call(server.url, 'POST', '/', { body: { crash: true } });
      const id = crashed.headers.get('x-request-id');
      expect(lines[0]).toMatch(/^request [A-Za-z0-9_-]{12}: GET \/health 200 \d+\.\dms$/);
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^error request ${id}: POST / failed`)));
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^request ${id}: POST / 500 `)));
    } finally {
      await server.close();
    }
  });
});
