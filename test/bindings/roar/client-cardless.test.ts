// Our ROAR client and detection against a ROAR agent without a card: the one ROAR's own router serves (roar_sdk 0.3.2
// `create_roar_router`: `/roar/health`, `/roar/message`, `/roar/ws`, no `/roar/card`), emulated in test/helpers/roar-router.ts.
import { afterAll, describe, expect, it } from 'vitest';
import { cardlessAddress, detectPeerKind, RoarClient } from '../../../src/bindings/peers.js';
import { startRoarRouter, type RoarRouter, type RoarRouterOptions } from '../../helpers/roar-router.js';

describe('RoarClient and a ROAR agent without a card', () => {
  const routers: RoarRouter[] = [];
  afterAll(async () => {
    for (const router of routers) await router.close();
  });
  const start = async (options: Partial<RoarRouterOptions> = {}) => {
    const router = await startRoarRouter({
      name: 'reviewer',
      answer: (payload) => ({ status: 'ok', result: `reviewed: ${String(payload.task)}` }),
      ...options,
    });
    routers.push(router);
    return router;
  };

  it('addresses a card-less agent as did:web of its URL, never an empty DID (the SDK would make one up and the HMAC would not verify)', () => {
    expect(cardlessAddress('http://127.0.0.1:8089')).toMatchObject({ did: 'did:web:127.0.0.1%3A8089' });
    expect(cardlessAddress('https://agents.example/team/reviewer/')).toMatchObject({
      did: 'did:web:agents.example:team:reviewer',
    });
  });

  it('asks an agent that serves no card, unsigned by a secret (its own Ed25519 key), its card looked for once', async () => {
    const router = await start();
    const client = new RoarClient({ timeoutMs: 5000 });
    const answer = await client.ask(router.url, { body: 'my diff' });
    expect(answer.result).toBe('reviewed: my diff');
    expect(answer.reply).toMatchObject({ fromDid: router.did, verified: 'none' });
    expect(router.received[0]).toMatchObject({
      to: `did:web:127.0.0.1%3A${new URL(router.url).port}`,
      intent: 'delegate',
      payload: { task: 'my diff' },
      signed: true,
    });
    await client.ask(router.url, { body: 'again' });
    expect(router.requests.filter((request) => request === 'GET /roar/card')).toHaveLength(1);
    await expect(client.card(router.url)).rejects.toThrow(
      /GET http:\/\/127\.0\.0\.1:\d+\/roar\/card: HTTP 404 \(the agent serves no ROAR card\)/,
    );
  });

  it('signs with the shared secret and verifies the signed reply; a wrong secret is refused by the agent', async () => {
    const router = await start({ secret: 'shh', signReplies: true });
    const answer = await new RoarClient({ secret: 'shh', timeoutMs: 5000 }).ask(router.url, { body: 'signed diff' });
    expect(answer).toMatchObject({ result: 'reviewed: signed diff', reply: { verified: 'hmac' } });
    await expect(new RoarClient({ secret: 'wrong', timeoutMs: 5000 }).ask(router.url, { body: 'x' })).rejects.toThrow(
      /POST http:\/\/127\.0\.0\.1:\d+\/roar\/message: HTTP 403 \(signature_invalid\)/,
    );
    // Without a secret the message carries an Ed25519 signature, which an agent holding a secret refuses as well.
    await expect(new RoarClient({ timeoutMs: 5000 }).ask(router.url, { body: 'x' })).rejects.toThrow(
      /HTTP 403 \(signature_invalid\)/,
    );
  });

  it('refuses, with a secret, a reply the agent did not sign (the router never signs; its handler must)', async () => {
    const router = await start({ secret: 'shh' });
    await expect(new RoarClient({ secret: 'shh', timeoutMs: 5000 }).ask(router.url, { body: 'x' })).rejects.toThrow(
      /the reply is not signed \(an agent sharing our secret must sign its replies with it\)/,
    );
    expect(router.received).toHaveLength(1);
  });

  it('streams over its WebSocket (one reply frame per message) and reads its bare error frame as a refusal', async () => {
    const router = await start({ secret: 'shh', signReplies: true });
    const pieces: unknown[] = [];
    for await (const piece of new RoarClient({ secret: 'shh', timeoutMs: 5000 }).stream(router.url, {
      body: 'over the socket',
    }))
      pieces.push(piece.type === 'done' ? piece.answer.result : piece);
    expect(pieces).toEqual(['reviewed: over the socket']);
    const refused = (async () => {
      for await (const _piece of new RoarClient({ secret: 'wrong', timeoutMs: 60_000 }).stream(router.url, {
        body: 'x',
      }))
        void _piece;
    })();
    await expect(refused).rejects.toThrow(
      /WebSocket ws:\/\/127\.0\.0\.1:\d+\/roar\/ws(?:\?deltas=true)?: the agent refused the message \(signature_invalid\)/,
    );
  });

  it('is detected as ROAR from /roar/health, probed after every other kind', async () => {
    const router = await start();
    expect(await detectPeerKind(router.url, { timeoutMs: 5000 })).toBe('roar');
    expect(router.requests).toEqual([
      'GET /wellknown',
      'GET /roar/card',
      'GET /.well-known/agent-card.json',
      'GET /',
      'GET /roar/health',
    ]);
  });
});
