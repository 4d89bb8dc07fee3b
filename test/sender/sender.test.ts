// src/sender/sender.ts: the Sender against our receiver under a path prefix, and Python SDK interop.
import { describe, expect, it } from 'vitest';
import { createHandler } from '../../src/agora/handler.js';
import { encodeDataUri } from '../../src/protocol/sources.js';
import { silentLogger } from '../../src/log.js';
import { DISTANCE, DISTANCE_HEX, senderSuite } from '../helpers/sender.js';
import { pythonDataUri, pythonHash, pythonSend } from '../helpers/python-peer.js';

const { rawServer, sender, peers } = senderSuite({ python: true });

describe('the Sender', () => {
  it('joins URLs under a path prefix', async () => {
    const handle = createHandler(peers.agent.receiver, { logger: silentLogger });
    const prefixed = await rawServer((request, respond) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const url = request.url ?? '/';
        if (!url.startsWith('/agora')) return respond(404, 'text/plain', 'outside the prefix');
        void handle({
          method: request.method ?? 'GET',
          path: url.slice('/agora'.length) || '/',
          headers: request.headers,
          body: Buffer.concat(chunks),
        }).then((result) =>
          respond(result.status, result.headers['content-type'] ?? 'text/plain', String(result.body)),
        );
      });
    });
    const base = `${prefixed.url}/agora`;
    const client = sender();
    expect(Object.keys(await client.wellknown(`${base}/`))).toEqual([DISTANCE_HEX]);
    expect((await client.query(base, { protocol: DISTANCE, body: { miles: 5 } })).body).toEqual({ km: 8.047 });
    const conversation = client.conversation(`${base}?ignored=1`);
    await conversation.send('What is 4 miles in km?');
    expect((await conversation.send('ok')).body).toBe('You said: ok');
    await conversation.close();
    expect((await client.protocols(base))[0]).toMatchObject({ hash: DISTANCE_HEX, document: { text: DISTANCE } });
  });
});

describe('Python SDK 0.2.0 peers', () => {
  it('the emulation refuses hex hashes, as the Python SDK does', async () => {
    const reply = await fetch(`${peers.python.url}/`, {
      method: 'POST',
      body: JSON.stringify({ protocolHash: DISTANCE_HEX, protocolSources: [encodeDataUri(DISTANCE)], body: {} }),
    });
    expect(await reply.json()).toEqual({ status: 'error', message: 'Failed to download protocol' });
  });

  it('answers a Python sender under a protocol (base64 hash)', async () => {
    const task = await pythonSend(peers.agent.url, { protocol: DISTANCE, bodies: [{ miles: 5 }] });
    expect(task.replies).toEqual([{ status: 'success', body: { km: 8.047 } }]);
    expect(task.requests[0]!.json).toEqual({
      protocolHash: pythonHash(DISTANCE),
      protocolSources: [pythonDataUri(DISTANCE)],
      body: { miles: 5 },
    });
  });

  it('answers a Python sender in natural language: multiround, re-sent fields, DELETE', async () => {
    const task = await pythonSend(peers.agent.url, { bodies: ['What is 6 miles in km?', 'And back?'] });
    const [first, second, closed] = task.replies;
    expect(first).toMatchObject({
      status: 'success',
      body: '6 miles is 9.656 km.',
      conversationId: expect.any(String),
    });
    expect(second).toMatchObject({
      status: 'success',
      body: 'You said: And back?',
      conversationId: first.conversationId,
    });
    expect(closed).toEqual({ status: 'success', body: null });
    expect(task.requests[1]!.json).toEqual({
      protocolHash: null,
      protocolSources: [],
      multiround: true,
      body: 'And back?',
    });
  });

  it('answers a Python sender in a multiround conversation under a protocol', async () => {
    const task = await pythonSend(peers.agent.url, {
      protocol: DISTANCE,
      multiround: true,
      bodies: [{ miles: 1 }, { miles: 3 }],
    });
    expect(task.replies.map((reply) => reply.body)).toEqual([{ km: 1.609 }, { km: 4.828 }, null]);
  });
});
