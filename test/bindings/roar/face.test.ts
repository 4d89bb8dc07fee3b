import { generateKeyPairSync } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { parseLossless, type LosslessValue } from '../../../src/bindings/roar/canonical.js';
import { publicKeyFromHex, rawKeyHex, verifyEd25519, verifyHmac } from '../../../src/bindings/roar/signing.js';
import type { EdgeResponse } from '../../../src/edge/response.js';
import { fakeReceiver, makeFaces, PROTOCOL_HASH, serveFaces, type TestFaces } from '../../faces/_helpers.js';
import { pythonMessage as build, replyVerifies, SENDER, type MessageOptions } from './_messages.js';

const SECRET = 'shared-secret';
let clock = 1_710_000_000_000;
const now = () => clock;
const pythonMessage = (to: string, payload: LosslessValue, options: Omit<MessageOptions, 'now'> = {}) =>
  build(to, payload, { now: clock, ...options });

async function post(
  faces: TestFaces,
  body: string,
  headers: Record<string, string> = {},
): Promise<EdgeResponse & { json: Record<string, unknown> }> {
  const response = (await faces.handle({ method: 'POST', path: '/roar/message', headers, body: Buffer.from(body) }))!;
  return { ...response, json: JSON.parse(response.body as string) as Record<string, unknown> };
}

afterEach(() => {
  clock = 1_710_000_000_000;
});

describe('ROAR face over HTTP', () => {
  it('answers health, the card and the agents list without auth', async () => {
    const faces = makeFaces({ tokens: ['t0k'] });
    const health = await faces.handle({ method: 'GET', path: '/roar/health', headers: {}, body: undefined });
    expect(JSON.parse(health!.body as string)).toEqual({ status: 'ok', protocol: 'roar/1.0' });
    const card = JSON.parse(
      (await faces.handle({
        method: 'GET',
        path: '/roar/card',
        headers: { host: 'agent.test:8080' },
        body: undefined,
      }))!.body as string,
    );
    expect(card.identity).toMatchObject({
      did: expect.stringMatching(/^did:roar:agent:test-agent-[0-9a-f]{16}$/),
      display_name: 'Test agent',
      agent_type: 'agent',
      version: '1.0',
      public_key: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(card.skills).toEqual(['Unit conversion']);
    expect(card.channels).toEqual(['http', 'websocket']);
    expect(card.endpoints).toEqual({
      http: 'http://agent.test:8080',
      websocket: 'ws://agent.test:8080',
      ws: 'ws://agent.test:8080/roar/ws',
    });
    expect(card.declared_capabilities[0]).toMatchObject({ name: 'Unit conversion', protocolHash: PROTOCOL_HASH });
    const agents = JSON.parse(
      (await faces.handle({ method: 'GET', path: '/roar/agents', headers: {}, body: undefined }))!.body as string,
    );
    expect(agents.agents[0].identity.did).toBe(card.identity.did);
    expect(await faces.handle({ method: 'GET', path: '/wellknown', headers: {}, body: undefined })).toBeUndefined();
  });

  it('keeps one identity per memory across restarts', async () => {
    const faces = makeFaces();
    const memory = (await import('../../../src/memory/file.js')).InMemoryMemory;
    const shared = new memory();
    const first = await makeFaces({ memory: shared }).identity();
    const second = await makeFaces({ memory: shared }).identity();
    expect(second.did).toBe(first.did);
    expect(second.publicKeyHex).toBe(first.publicKeyHex);
    expect((await faces.identity()).did).not.toBe(first.did);
  });

  it('answers an HMAC-signed protocol query with a signed respond message a Python verifier accepts (integer and non-ASCII payload)', async () => {
    const receiver = fakeReceiver();
    const faces = makeFaces({ roarSecret: SECRET, now }, receiver);
    const me = (await faces.identity()).did;
    const payload = parseLossless(
      `{"protocolHash": "${PROTOCOL_HASH}", "body": {"value": 42, "from": "km", "to": "mi", "note": "caf\\u00e9 \\ud83d\\ude00", "ratio": 1.0}}`,
    );
    const response = await post(faces, pythonMessage(me, payload, { secret: SECRET, id: 'msg_one' }));
    expect(response.status).toBe(200);
    expect(receiver.queries[0]).toEqual({
      protocolHash: PROTOCOL_HASH,
      body: { value: 42, from: 'km', to: 'mi', note: 'café 😀', ratio: 1 },
    });
    expect(response.json).toMatchObject({
      roar: '1.0',
      intent: 'respond',
      from: { did: me },
      to: { did: SENDER },
      context: { in_reply_to: 'msg_one' },
      payload: { status: 'ok', result: { converted: true } },
    });
    expect(response.body as string).toContain('"timestamp": 1710000000.0');
    expect(replyVerifies(response.body as string, (body, signature) => verifyHmac(body, signature, SECRET))).toBe(true);
  });

  it('answers in valid JSON when the sender identity holds a number JSON cannot print (1e400), its signature still right', async () => {
    const faces = makeFaces({ roarSecret: SECRET, now });
    const me = (await faces.identity()).did;
    const payload = parseLossless(`{"protocolHash": "${PROTOCOL_HASH}", "body": {"value": 1e400}}`);
    // Signed over Python's text for it (`Infinity`), sent as `1e400`: the lossless reader takes such a message.
    const message = pythonMessage(me, payload, { secret: SECRET })
      .replace('Infinity', '1e400')
      .replace('"display_name": "sender"', '"display_name": "sender", "weight": -1e400');
    const response = await post(faces, message);
    expect(response.status).toBe(200);
    expect(response.json).toMatchObject({
      to: { did: SENDER, weight: null },
      payload: { status: 'ok', result: { converted: true, input: { value: null } } },
    });
    expect(replyVerifies(response.body as string, (body, signature) => verifyHmac(body, signature, SECRET))).toBe(true);
  });

  it('checks a message JSON.parse reads (fractional timestamps kept as numbers) as strictly as one the lossless reader reads', async () => {
    const faces = makeFaces({ roarSecret: SECRET, now });
    const me = (await faces.identity()).did;
    const payload = { protocolHash: PROTOCOL_HASH, body: { value: 10, from: 'km', to: 'mi' } };
    const fresh = pythonMessage(me, payload, { secret: SECRET, timestamp: clock - 1_234 });
    expect(fresh).toContain('"timestamp": 1709999998.766');
    const ok = await post(faces, fresh);
    expect([ok.status, (ok.json.payload as { status: string }).status]).toEqual([200, 'ok']);
    expect(replyVerifies(ok.body as string, (body, signature) => verifyHmac(body, signature, SECRET))).toBe(true);
    const refused = async (text: string) => (await post(faces, text)).json.error;
    expect(
      await refused(
        pythonMessage(me, payload, { secret: SECRET, timestamp: clock - 1_234 }).replace('"value": 10', '"value": 11'),
      ),
    ).toBe('signature_invalid');
    expect(await refused(pythonMessage(me, payload, { secret: 'wrong', timestamp: clock - 1_234 }))).toBe(
      'signature_invalid',
    );
    expect(await refused(pythonMessage(me, payload, { secret: SECRET, timestamp: clock - 300_001 }))).toBe(
      'signature_invalid',
    );
    expect(await refused(fresh)).toBe('duplicate_message');
  });

  it('verifies Ed25519 only with the trusted key for from.did, and signs replies with its own key', async () => {
    const sender = generateKeyPairSync('ed25519');
    const faces = makeFaces({ roarTrust: { [SENDER]: rawKeyHex(sender.publicKey) }, now });
    const identity = await faces.identity();
    const ok = await post(faces, pythonMessage(identity.did, { task: 'hello' }, { key: sender.privateKey }));
    expect(ok.status).toBe(200);
    expect(ok.json.payload).toEqual({ status: 'ok', result: 'turn 1: hello' });
    expect(
      replyVerifies(ok.body as string, (body, signature) =>
        verifyEd25519(body, signature, publicKeyFromHex(identity.publicKeyHex)),
      ),
    ).toBe(true);
    const stranger = generateKeyPairSync('ed25519');
    const forged = await post(faces, pythonMessage(identity.did, { task: 'hello' }, { key: stranger.privateKey }));
    expect([forged.status, forged.json.error]).toEqual([401, 'signature_invalid']);
    const unknown = await post(
      faces,
      pythonMessage(
        identity.did,
        { task: 'hello' },
        { key: stranger.privateKey, from: 'did:roar:agent:other-0123456789abcdef' },
      ),
    );
    expect([unknown.status, unknown.json.error]).toEqual([401, 'signature_invalid']);
    const hmac = await post(faces, pythonMessage(identity.did, { task: 'hello' }, { secret: SECRET }));
    expect([hmac.status, hmac.json.error]).toEqual([401, 'no_signing_secret']);
  });

  it('refuses unsigned, tampered, stale, future, replayed and misaddressed messages with ROAR error codes', async () => {
    const faces = makeFaces({ roarSecret: SECRET, now });
    const me = (await faces.identity()).did;
    const refused = async (text: string) => {
      const response = await post(faces, text);
      return [response.status, response.json.error];
    };
    expect(await refused(pythonMessage(me, { task: 'x' }))).toEqual([401, 'signature_invalid']);
    expect(await refused(pythonMessage(me, { task: 'x' }, { secret: 'wrong' }))).toEqual([401, 'signature_invalid']);
    expect(
      await refused(pythonMessage(me, { task: 'x', n: 42 }, { secret: SECRET }).replace('"n": 42', '"n": 42.0')),
    ).toEqual([401, 'signature_invalid']);
    expect(await refused(pythonMessage(me, { task: 'x' }, { secret: SECRET, timestamp: clock - 301_000 }))).toEqual([
      401,
      'signature_invalid',
    ]);
    expect(await refused(pythonMessage(me, { task: 'x' }, { secret: SECRET, timestamp: clock + 31_000 }))).toEqual([
      401,
      'signature_invalid',
    ]);
    expect(
      await refused(pythonMessage('did:roar:agent:someone-0123456789abcdef', { task: 'x' }, { secret: SECRET })),
    ).toEqual([400, 'invalid_message']);
    const once = pythonMessage(me, { task: 'x' }, { secret: SECRET, id: 'msg_replayed' });
    expect((await post(faces, once)).status).toBe(200);
    expect(await refused(once)).toEqual([409, 'duplicate_message']);
    for (const bad of [
      '{',
      '[]',
      '{"id": "m", "intent": "shout", "from": {"did": "did:roar:agent:a"}, "to": {"did": "did:roar:agent:b"}}',
      '{"id": 5}',
    ]) {
      expect(await refused(bad)).toEqual([400, 'invalid_message']);
    }
  });

  it('maps task/text/message to natural language; an unsigned session_id is kept as the client chose it and echoed', async () => {
    const receiver = fakeReceiver();
    const faces = makeFaces({}, receiver);
    const me = (await faces.identity()).did;
    // ROAR's SDK client picks `context.session_id` itself and sends it with every message of the conversation
    // (roar_sdk client.py): the reply carries the same id, and the next message is the next turn.
    const first = await post(faces, pythonMessage(me, { text: 'hi' }, { context: { session_id: 's1' } }));
    const second = await post(faces, pythonMessage(me, { message: 'again' }, { context: { session_id: 's1' } }));
    const third = await post(faces, pythonMessage(me, { task: 'more' }, { context: { session_id: 's1' } }));
    const other = await post(faces, pythonMessage(me, { task: 'other' }, { context: { session_id: 's2' } }));
    expect([first.json.payload, second.json.payload, third.json.payload, other.json.payload]).toEqual([
      { status: 'ok', result: 'turn 1: hi' },
      { status: 'ok', result: 'turn 2: again' },
      { status: 'ok', result: 'turn 3: more' },
      { status: 'ok', result: 'turn 1: other' },
    ]);
    for (const reply of [first, second, third])
      expect((reply.json.context as Record<string, unknown>).session_id).toBe('s1');
    expect((other.json.context as Record<string, unknown>).session_id).toBe('s2');
  });

  it("keeps a signed sender's session_id as it chose it, scoped to the verified DID", async () => {
    const faces = makeFaces({ roarSecret: SECRET, now }, fakeReceiver());
    const me = (await faces.identity()).did;
    const send = (text: string, from?: string) =>
      post(
        faces,
        pythonMessage(me, { text }, { secret: SECRET, context: { session_id: 's1' }, ...(from ? { from } : {}) }),
      );
    const first = await send('hi');
    const second = await send('again');
    const other = await send('other', 'did:roar:agent:b-0123456789abcdef');
    expect([first.json.payload, second.json.payload, other.json.payload]).toEqual([
      { status: 'ok', result: 'turn 1: hi' },
      { status: 'ok', result: 'turn 2: again' },
      { status: 'ok', result: 'turn 1: other' },
    ]);
    expect((second.json.context as Record<string, unknown>).session_id).toBe('s1');
  });

  it('answers Agora failures as error payloads, never leaking internals', async () => {
    const faces = makeFaces();
    const me = (await faces.identity()).did;
    const unsupported = await post(faces, pythonMessage(me, { protocolHash: 'bad', body: {} }));
    expect(unsupported.json.payload).toEqual({
      status: 'error',
      error: 'unsupported_protocol',
      message: 'Unsupported protocol',
    });
    const crashed = await post(faces, pythonMessage(me, { protocolHash: 'crash', body: {} }));
    expect(crashed.json.payload).toEqual({ status: 'error', error: 'internal', message: 'Internal error' });
    expect(crashed.body as string).not.toContain('secret internals');
    const discover = await post(
      faces,
      pythonMessage(me, { task: 'who' }).replace(/"intent": "delegate"/g, '"intent": "discover"'),
    );
    expect((discover.json.payload as { result: { skills: string[] } }).result.skills).toEqual(['Unit conversion']);
  });

  it('needs the bearer token on messages, caps the body, and answers the shared rate limit with Retry-After', async () => {
    // The edge's rate limit: 3 requests per 7 s per client; the client 'busy' has spent its 3 before the last call.
    const faces = makeFaces({ tokens: ['t0k'], maxBodyBytes: 2000, rateLimit: { windowMs: 7000, max: 3 } });
    for (let index = 0; index < 3; index++)
      await faces.handle({ method: 'GET', path: '/roar/health', headers: {}, body: undefined, remoteAddress: 'busy' });
    const me = (await faces.identity()).did;
    expect((await post(faces, pythonMessage(me, { task: 'x' }))).status).toBe(401);
    expect((await post(faces, pythonMessage(me, { task: 'x' }), { authorization: 'Bearer t0k' })).status).toBe(200);
    const big = await post(faces, pythonMessage(me, { task: 'x'.repeat(3000) }), { authorization: 'Bearer t0k' });
    expect([big.status, big.json.error]).toEqual([413, 'request_too_large']);
    const limited = await faces.handle({
      method: 'POST',
      path: '/roar/message',
      headers: {},
      body: Buffer.from('{}'),
      remoteAddress: 'busy',
    });
    expect([limited!.status, limited!.headers['retry-after']]).toEqual([429, '7']);
  });
});

describe('ROAR face on a node:http server', () => {
  it('serves messages over HTTP and over /roar/ws: auth frame, then the reply ROARMessage as one frame', async () => {
    const faces = makeFaces({ tokens: ['t0k'] });
    const served = await serveFaces(faces);
    try {
      const me = (await faces.identity()).did;
      const http = await fetch(`${served.url}/roar/message`, {
        method: 'POST',
        headers: { authorization: 'Bearer t0k' },
        body: pythonMessage(me, { task: 'over http' }),
      });
      expect(((await http.json()) as { payload: unknown }).payload).toEqual({
        status: 'ok',
        result: 'turn 1: over http',
      });

      const socket = new WebSocket(`${served.url.replace('http', 'ws')}/roar/ws`);
      const frames: Record<string, unknown>[] = [];
      const done = new Promise<void>((resolve, reject) => {
        socket.on('message', (data) => {
          const frame = JSON.parse(String(data)) as Record<string, unknown>;
          frames.push(frame);
          if (frame.type === 'auth_ok') socket.send(pythonMessage(me, { task: 'streamed' }));
          if (frame.intent === 'respond') resolve();
          if (frame.type === 'error') reject(new Error(String(frame.message)));
        });
      });
      await new Promise((resolve) => socket.once('open', resolve));
      socket.send(JSON.stringify({ type: 'auth', token: 't0k' }));
      await done;
      // No deltas asked for: the reply ROARMessage itself is the one frame, with no `type` of its own.
      expect(frames.map((frame) => frame.type)).toEqual(['auth_ok', undefined]);
      const final = frames.at(-1) as { payload: { result: string }; intent: string };
      expect(final.intent).toBe('respond');
      expect(final.payload.result).toBe('turn 1: streamed');
      socket.close();

      const silent = new WebSocket(`${served.url.replace('http', 'ws')}/roar/ws`);
      const code = await new Promise((resolve) => silent.on('close', (closeCode) => resolve(closeCode)));
      expect(code).toBe(1008);

      const wrong = new WebSocket(`${served.url.replace('http', 'ws')}/roar/ws`);
      await new Promise((resolve) => wrong.once('open', resolve));
      wrong.send(JSON.stringify({ type: 'auth', token: 'nope' }));
      expect(await new Promise((resolve) => wrong.on('close', (closeCode) => resolve(closeCode)))).toBe(1008);
    } finally {
      await served.close();
    }
  });
});
