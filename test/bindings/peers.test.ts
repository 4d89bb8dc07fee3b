// Our clients against our own faces: what a ROAR, A2A or OAP peer of ours gets from us, read back by our clients.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/edge/node.js';
import type { StreamAnswer } from '../../src/faces/stream.js';
import { A2aClient, askPeer, detectPeerKind, OapClient, oapEnvelope, RoarClient } from '../../src/bindings/peers.js';
import { fakeReceiver, makeFaces, PROTOCOL_HASH, serveFaces } from '../faces/_helpers.js';

describe("the peer clients against our agents' faces", () => {
  let served: RunningServer;
  beforeAll(async () => {
    served = await serveFaces(makeFaces({ roarSecret: 'ours' }, fakeReceiver()));
  });
  afterAll(async () => served.close());

  it('asks our ROAR face over HTTP and its WebSocket, signed with the shared secret, and verifies its replies', async () => {
    const client = new RoarClient({ secret: 'ours' });
    const answer = await client.ask(served.url, { body: { value: 1 }, protocolHash: PROTOCOL_HASH });
    expect(answer.result).toEqual({ converted: true, input: { value: 1 } });
    expect(answer.reply.verified).toBe('hmac');
    const pieces: string[] = [];
    for await (const piece of client.stream(served.url, { body: 'hello' }))
      pieces.push(piece.type === 'done' ? `done:${String(piece.answer.result)}` : piece.delta);
    expect(pieces.at(-1)).toMatch(/^done:turn \d+: hello$/);
    const quiet: string[] = [];
    for await (const piece of client.stream(served.url, { body: 'hello', deltas: false })) quiet.push(piece.type);
    expect(quiet).toEqual(['done']);
    await expect(new RoarClient({ secret: 'not ours' }).ask(served.url, { body: 'x' })).rejects.toThrow(
      /HTTP 401 \(signature_invalid\)/,
    );
  });

  it('sends to our A2A face through the SDK, and invokes our OAP face with a full envelope', async () => {
    expect(
      (await new A2aClient().send(served.url, { body: { protocolHash: PROTOCOL_HASH, body: { value: 2 } } })).result,
    ).toEqual({ converted: true, input: { value: 2 } });
    const reply = await new OapClient().invoke(
      served.url,
      oapEnvelope({ goal: 'convert', memory: { agora: { protocolHash: PROTOCOL_HASH, body: { value: 3 } } } }),
    );
    expect(reply.result).toEqual({ converted: true, input: { value: 3 } });
    // Our agents serve /wellknown too: Agora is what they are asked in first.
    expect(await detectPeerKind(served.url)).toBe('agora');
    expect((await askPeer('a2a', served.url, { body: 'hi' })).body).toMatch(/^turn \d+: hi$/);
  });

  it("streams from our ROAR face behind a token, the token in the upgrade's Authorization header", async () => {
    const guarded = await serveFaces(makeFaces({ tokens: ['s3cret'] }, fakeReceiver()));
    try {
      const pieces: string[] = [];
      for await (const piece of new RoarClient({ token: 's3cret' }).stream(guarded.url, { body: 'hello' }))
        pieces.push(piece.type);
      expect(pieces.at(-1)).toBe('done');
      await expect(new RoarClient({ token: 'wrong' }).ask(guarded.url, { body: 'x' })).rejects.toThrow(/HTTP 401/);
    } finally {
      await guarded.close();
    }
  });

  it('asks our ROAR face for deltas (our faces send them only when asked), and gets the bare reply when it does not ask', async () => {
    const stream: StreamAnswer = async function* () {
      yield { type: 'delta', delta: 'One' };
      yield { type: 'delta', delta: ' two' };
      yield { type: 'done', reply: { status: 'success', body: 'One two' } };
    };
    const streaming = await serveFaces(makeFaces({ stream }, fakeReceiver()));
    try {
      const pieces: string[] = [];
      for await (const piece of new RoarClient().stream(streaming.url, { body: 'count' }))
        pieces.push(piece.type === 'done' ? `done:${String(piece.answer.result)}` : piece.delta);
      expect(pieces).toEqual(['One', ' two', 'done:One two']);
      const quiet: string[] = [];
      for await (const piece of new RoarClient().stream(streaming.url, { body: 'count', deltas: false }))
        quiet.push(piece.type === 'done' ? `done:${String(piece.answer.result)}` : piece.delta);
      expect(quiet).toEqual(['done:turn 1: count']);
    } finally {
      await streaming.close();
    }
  });
});
