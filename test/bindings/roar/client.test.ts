import { readFileSync } from 'node:fs';
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { parseLossless } from '../../../src/bindings/roar/canonical.js';
import { rawKeyHex, signingBody, verifyEd25519 } from '../../../src/bindings/roar/signing.js';
import type { JsonValue } from '../../../src/schemas.js';
import { writeRoarMessage } from '../../../src/bindings/roar/client-message.js';
import { RoarClient, type RoarStreamEvent } from '../../../src/bindings/roar/client.js';
import { startRoarServer, type RoarTestServer } from '../../helpers/roar-server.js';

const golden = JSON.parse(
  readFileSync(new URL('../../fixtures/roar-golden/signature.json', import.meta.url), 'utf8'),
) as {
  secret: string;
  inputs: {
    id: string;
    from: string;
    to: string;
    intent: string;
    payload: Record<string, string>;
    context: Record<string, string>;
  };
  canonical_json: string;
  expected_signature: string;
};

describe('RoarClient', () => {
  const servers: RoarTestServer[] = [];
  afterAll(async () => {
    for (const server of servers) await server.close();
  });
  const start = async (options: Partial<Parameters<typeof startRoarServer>[0]> = {}) => {
    const server = await startRoarServer({
      name: 'reviewer',
      description: 'Reviews code.',
      capabilities: ['review', 'python'],
      answer: (task): JsonValue | { pieces: string[] } =>
        task === 'stream' ? { pieces: ['a', 'b', 'c'] } : { reviewed: task },
      ...options,
    });
    servers.push(server);
    return server;
  };

  it("signs a message with HMAC exactly as ROAR's golden fixture does", () => {
    const { inputs } = golden;
    const { text } = writeRoarMessage(
      {
        id: inputs.id,
        self: { did: inputs.from },
        to: { did: inputs.to },
        intent: inputs.intent as 'delegate',
        payload: inputs.payload,
        context: inputs.context,
      },
      { secret: golden.secret, now: () => 1_710_000_000_000 },
    );
    const sent = parseLossless(text) as { auth: { signature: string } };
    expect(sent.auth.signature).toBe(golden.expected_signature);
    expect(text).toContain('"timestamp": 1710000000.0');
  });

  it('signs with its Ed25519 key when it has no secret', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const { id, text } = writeRoarMessage(
      {
        self: { did: 'did:roar:agent:me-0123456789abcdef', privateKey, publicKeyHex: rawKeyHex(publicKey) },
        to: { did: 'did:roar:agent:you-0123456789abcdef' },
        intent: 'delegate',
        payload: { task: 'x' },
      },
      {},
    );
    const sent = parseLossless(text) as Record<string, any>;
    const body = signingBody({
      id,
      from: sent.from.did,
      to: sent.to.did,
      intent: 'delegate',
      payload: sent.payload,
      context: sent.context,
      timestamp: sent.auth.timestamp,
    });
    expect(verifyEd25519(body, sent.auth.signature, publicKey)).toBe(true);
  });

  it('reads the card and health, sends a signed message and verifies the signed reply', async () => {
    const server = await start({ secret: 'shared-secret' });
    const client = new RoarClient({ secret: 'shared-secret', timeoutMs: 5000 });
    expect((await client.card(server.url)).identity.did).toBe(server.did);
    expect(await client.health(server.url)).toEqual({ status: 'ok', protocol: 'roar/1.0' });
    const answer = await client.ask(server.url, { body: 'check this diff' });
    expect(answer.result).toEqual({ reviewed: 'check this diff' });
    expect(answer.reply.verified).toBe('hmac');
    expect(answer.sessionId).toMatch(/^sess_/);
    expect(server.received.at(-1)).toMatchObject({
      intent: 'delegate',
      payload: { task: 'check this diff' },
      signed: true,
    });
  });

  it('is refused by an agent with another secret, and refuses a reply whose signature does not verify', async () => {
    const server = await start({ secret: 'shared-secret' });
    await expect(new RoarClient({ secret: 'wrong' }).ask(server.url, { body: 'x' })).rejects.toThrow(
      /POST http:\/\/127\.0\.0\.1:\d+\/roar\/message: HTTP 401 \(signature_invalid\)/,
    );
    const tampering = await start({ secret: 'shared-secret', tamper: true });
    await expect(new RoarClient({ secret: 'shared-secret' }).ask(tampering.url, { body: 'x' })).rejects.toThrow(
      /HMAC signature does not verify/,
    );
  });

  it('streams over the WebSocket: deltas, then the verified reply frame; deltas can be turned off', async () => {
    const server = await start({ secret: 's' });
    const client = new RoarClient({ secret: 's', timeoutMs: 5000 });
    const pieces: string[] = [];
    let result: unknown;
    for await (const piece of client.stream(server.url, { body: 'stream' })) {
      if (piece.type === 'delta') pieces.push(piece.delta);
      else result = piece.answer.result;
    }
    expect(pieces).toEqual(['a', 'b', 'c']);
    expect(result).toBe('abc');
    const quiet: string[] = [];
    for await (const piece of client.stream(server.url, { body: 'stream', deltas: false })) quiet.push(piece.type);
    expect(quiet).toEqual(['done']);
  });

  it('reads ROAR\'s router\'s refusal frame over the WebSocket (`{"error": code}`, no type) as a refusal, at once', async () => {
    const server = await start({ secret: 's' });
    const refused = (async () => {
      for await (const piece of new RoarClient({ secret: 'not s', timeoutMs: 60_000 }).stream(server.url, {
        body: 'stream',
      }))
        void piece;
    })();
    await expect(refused).rejects.toThrow(
      /WebSocket ws:\/\/127\.0\.0\.1:\d+\/roar\/ws\?deltas=true: the agent refused the message \(signature_invalid\)/,
    );
  });

  it("reads the agent's task events over SSE", async () => {
    const server = await start();
    const client = new RoarClient({ timeoutMs: 5000 });
    const controller = new AbortController();
    const events: RoarStreamEvent[] = [];
    const reading = (async () => {
      for await (const event of client.events(server.url, { signal: controller.signal })) {
        events.push(event);
        if (events.length === 2) controller.abort();
      }
    })();
    await server.listening();
    await client.ask(server.url, { body: 'anything' });
    await reading;
    expect(events.map((event) => [event.type, (event.data as { status: string }).status])).toEqual([
      ['task_update', 'working'],
      ['task_update', 'completed'],
    ]);
    expect(events[0]!.source).toBe(server.did);
  });
});
