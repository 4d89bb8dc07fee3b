import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SocketRouter } from '../../../src/edge/sockets.js';
import { fakeReceiver, makeFaces, serveFaces } from '../../faces/_helpers.js';

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

async function socketServer(options: { maxFrameBytes?: number; heartbeatMs?: number }): Promise<string> {
  // The frame cap is the edge's socket router's; the heartbeat is the ROAR face's.
  const served = await serveFaces(
    makeFaces({ roarSocket: options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs } }),
    options.maxFrameBytes === undefined ? {} : { maxMessageBytes: options.maxFrameBytes },
  );
  stops.push(served.close);
  return `${served.url.replace('http', 'ws')}/roar/ws`;
}

function closed(socket: WebSocket): Promise<number> {
  return new Promise((resolve) => socket.once('close', (code) => resolve(code)));
}

describe('ROAR WebSocket limits', () => {
  it('keeps an error listener on a socket it refuses as busy (a client reset must not end the process)', async () => {
    // The edge's socket router, at a cap of no socket at all.
    const router = new SocketRouter(makeFaces().edge, { maxSockets: 0 });
    stops.push(async () => router.close());
    const socket = new PassThrough();
    const written: string[] = [];
    const answered = new Promise((resolve) => socket.once('end', resolve));
    socket.on('data', (chunk: Buffer) => written.push(chunk.toString()));
    router.upgrade(
      {
        url: '/roar/ws',
        method: 'GET',
        headers: {},
        socket: { remoteAddress: '127.0.0.1' },
      } as unknown as IncomingMessage,
      socket,
      Buffer.alloc(0),
    );
    await answered;
    expect(written.join('')).toMatch(/^HTTP\/1\.1 503 /);
    expect(() =>
      socket.emit('error', Object.assign(new Error('write ECONNRESET'), { code: 'ECONNRESET' })),
    ).not.toThrow();
  });

  it('closes a socket that sends a frame over the cap with 1009, and never reads it as a message', async () => {
    const socket = new WebSocket(await socketServer({ maxFrameBytes: 256 }));
    const messages: string[] = [];
    socket.on('message', (data) => messages.push(String(data)));
    socket.on('error', () => {});
    await new Promise((resolve) => socket.once('open', resolve));
    const code = closed(socket);
    socket.send(JSON.stringify({ roar: '1.0', id: 'big', payload: { text: 'x'.repeat(1000) } }));
    expect(await code).toBe(1009);
    expect(messages).toEqual([]);
  });

  it('drops a socket that stops answering pings, and keeps one that answers', async () => {
    const url = await socketServer({ heartbeatMs: 20 });
    const silent = new WebSocket(url, { autoPong: false });
    const polite = new WebSocket(url);
    silent.on('error', () => {});
    let politePings = 0;
    polite.on('ping', () => (politePings += 1));
    await Promise.all([silent, polite].map((socket) => new Promise((resolve) => socket.once('open', resolve))));
    // The silent socket misses one pong and is terminated (1006: no close frame); the polite one lives on.
    expect(await closed(silent)).toBe(1006);
    const pingedAgain = politePings + 2;
    await new Promise<void>((resolve) => polite.on('ping', () => politePings >= pingedAgain && resolve()));
    expect(polite.readyState).toBe(WebSocket.OPEN);
    polite.close();
  });
});

describe("the edge's rate limit on ROAR's WebSocket", () => {
  it('counts each ROAR message: past the limit, a message gets the ROAR error frame and is not answered', async () => {
    const receiver = fakeReceiver();
    // Four events per client: the upgrade, then three messages; the next three are refused.
    const faces = makeFaces({ rateLimit: { windowMs: 60_000, max: 4 } }, receiver);
    const served = await serveFaces(faces);
    stops.push(served.close);
    const did = (await faces.identity()).did;
    const socket = new WebSocket(`${served.url.replace('http', 'ws')}/roar/ws`);
    const answers: Record<string, unknown>[] = [];
    const sixAnswers = new Promise<void>((resolve) => {
      socket.on('message', (data) => {
        const frame = JSON.parse(String(data)) as Record<string, unknown>;
        if (frame.type === 'delta') return;
        answers.push(frame);
        if (answers.length === 6) resolve();
      });
    });
    await new Promise((resolve) => socket.once('open', resolve));
    for (let index = 0; index < 6; index++) {
      socket.send(
        JSON.stringify({
          roar: '1.0',
          id: `msg_${index}`,
          from: { did: 'did:roar:agent:peer-0123456789abcdef' },
          to: { did },
          intent: 'ask',
          payload: { task: `question ${index}` },
        }),
      );
    }
    await sixAnswers;
    socket.close();
    expect(answers.filter((frame) => frame.intent === 'respond')).toHaveLength(3);
    expect(answers.filter((frame) => frame.type === 'error')).toEqual([
      { type: 'error', error: 'rate_limited', message: 'Too many requests' },
      { type: 'error', error: 'rate_limited', message: 'Too many requests' },
      { type: 'error', error: 'rate_limited', message: 'Too many requests' },
    ]);
    expect(receiver.queries).toHaveLength(3);
    // The same client's next HTTP request is refused too: one count for both.
    const http = await fetch(`${served.url}/roar/health`);
    expect([http.status, await http.json()]).toEqual([429, { error: 'rate_limited', message: 'Too many requests' }]);
  });
});
