// Property test of the Sender against a hostile peer: whatever a peer answers (any status, type, length, body,
// or nothing), every call ends within its timeout with a value or an AgoraError, never another error, never a hang.
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { Sender } from '../../src/sender/sender.js';

// FUZZ_RUNS=2000 npx vitest run test/sender/hostile-peer.test.ts for a deeper search.
const RUNS = Number(process.env.FUZZ_RUNS ?? 80);
const TIMEOUT_MS = 150;
const DOC = '---\nname: Weather\ndescription: Forecasts.\nmultiround: false\n---\nSend a city.\n';

type Answer =
  | { kind: 'close' }
  | { kind: 'silent' }
  | { kind: 'reply'; status: number; type: string | undefined; length: 'right' | 'more' | 'none'; body: string };
const bodies = fc.oneof(
  fc.constantFrom(
    '',
    '{',
    'null',
    '[]',
    '"x"',
    '{"status":"success"}',
    '{"status":"success","body":{"a":1}}',
    '{"status":"success","body":"{\\"a\\":1}"}',
    '{"status":"failure","error":5}',
    '{"status":"success","body":1e400}',
    '{"status":"success","body":"x","conversationId":5}',
    '{"status":"success","body":"x","conversationId":"c1","conversationExpires":"soon"}',
    '{"__proto__":{"status":"success"},"body":1}',
    DOC,
    'event: delta\ndata: {"delta":"a"}\n\n',
    'event: done\ndata: {"status":"success","body":"b"}\n\n',
    'data: {\n\n',
    'event: delta\ndata: null\n\n',
    ': ping\n\n',
  ),
  fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)),
  fc.string({ unit: 'binary', maxLength: 60 }),
);
const answer: fc.Arbitrary<Answer> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ kind: 'close' } as const) },
  { weight: 1, arbitrary: fc.constant({ kind: 'silent' } as const) },
  {
    weight: 12,
    arbitrary: fc.record({
      kind: fc.constant('reply' as const),
      status: fc.constantFrom(200, 201, 204, 302, 400, 404, 409, 429, 500, 503),
      type: fc.constantFrom('application/json', 'text/event-stream', 'text/plain', undefined),
      length: fc.constantFrom('right', 'more', 'none'),
      body: bodies,
    }),
  },
);

let next: Answer = { kind: 'close' };
const server = createServer((socket: Socket) => {
  socket.on('error', () => {});
  socket.once('data', () => {
    const now = next;
    if (now.kind === 'close') return socket.destroy();
    if (now.kind === 'silent') return;
    const size = Buffer.byteLength(now.body);
    const headers = [
      `HTTP/1.1 ${now.status} X`,
      ...(now.type ? [`Content-Type: ${now.type}`] : []),
      ...(now.length === 'none' ? [] : [`Content-Length: ${now.length === 'right' ? size : size + 40}`]),
      ...(now.status === 302 ? ['Location: /elsewhere'] : []),
      'Connection: close',
    ];
    socket.end(`${headers.join('\r\n')}\r\n\r\n${now.body}`);
  });
});
let url = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => server.close());

describe('Sender against a hostile peer', () => {
  it('ends every call with a value or an AgoraError, within its timeout', async () => {
    const sender = new Sender({ llm: null, logger: silentLogger, timeoutMs: TIMEOUT_MS });
    const calls = [
      () => sender.query(url, { protocol: DOC, body: { city: 'Paris' } }),
      () => sender.query(url, { protocol: DOC, body: { city: 'Paris' }, multiround: true }),
      () => sender.wellknown(url),
      () => sender.protocols(url),
      async () => {
        for await (const event of sender.stream(url, { protocol: DOC, body: { city: 'Paris' } })) void event;
      },
    ];
    await fc.assert(
      fc.asyncProperty(answer, fc.integer({ min: 0, max: calls.length - 1 }), async (reply, which) => {
        next = reply;
        const started = performance.now();
        const error = await calls[which]!().then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        if (error !== undefined) expect(error).toMatchObject({ name: 'AgoraError' });
        // Each exchange is bounded; a call makes a few (the peer's documents, then the query).
        expect(performance.now() - started).toBeLessThan(TIMEOUT_MS * 8);
      }),
      { numRuns: RUNS },
    );
    await sender.close();
  });
});
