import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { verifyHmac } from '../../../src/bindings/roar/signing.js';
import type { StreamAnswer } from '../../../src/faces/stream.js';
import { makeFaces, PROTOCOL_HASH, serveFaces, type FaceTestOptions } from '../../faces/_helpers.js';
import { roarDeltaFrame, roarDoneFrame, roarMessage, roarStreamEvent } from '../../faces/_peer-schemas.js';
import { pythonMessage, replyVerifies, sdkSendRemote } from './_messages.js';

const SECRET = 'ws-secret';
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** An answer streamed in pieces, as the LLM writes it. */
const pieces: StreamAnswer = async function* () {
  yield { type: 'delta', delta: 'One' };
  yield { type: 'delta', delta: ' two' };
  yield { type: 'done', reply: { status: 'success', body: 'One two' } };
};

async function serve(options: FaceTestOptions = {}) {
  const faces = makeFaces({ roarSecret: SECRET, ...options });
  const served = await serveFaces(faces);
  stops.push(served.close);
  return { url: served.url.replace('http', 'ws'), http: served.url, did: (await faces.identity()).did };
}

async function open(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  const socket = new WebSocket(url, { headers });
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  return socket;
}

/** Sends one message and reads the frames of its reply, up to the `done` one. */
async function exchange(socket: WebSocket, message: string): Promise<string[]> {
  const frames: string[] = [];
  const done = new Promise<void>((resolve) => {
    const listener = (data: WebSocket.RawData) => {
      frames.push(String(data));
      if ((JSON.parse(String(data)) as { type?: string }).type !== 'delta') {
        socket.off('message', listener);
        resolve();
      }
    };
    socket.on('message', listener);
  });
  socket.send(message);
  await done;
  return frames;
}

describe("ROAR's WebSocket, read as ROAR's SDK reads it", () => {
  it('answers each message with one frame: the signed reply ROARMessage itself, which ws_send reads', async () => {
    const agent = await serve();
    const { transport, frame } = await sdkSendRemote(
      agent.http,
      pythonMessage(
        agent.did,
        { protocolHash: PROTOCOL_HASH, body: { value: 3 } },
        { now: Date.now(), secret: SECRET },
      ),
    );
    // The card names `websocket`, so the SDK's `send_remote` takes it for every message.
    expect(transport).toBe('websocket');
    // Read strictly: the frame is the ROARMessage, nothing more (the SDK would ignore more; its own router sends none).
    expect(roarMessage.parse(JSON.parse(frame))).toMatchObject({
      intent: 'respond',
      from: { did: agent.did },
      payload: { status: 'ok', result: { converted: true, input: { value: 3 } } },
    });
    expect(replyVerifies(frame, (body, signature) => verifyHmac(body, signature, SECRET))).toBe(true);
  });

  it('asks for the whole answer when no deltas were asked for: one frame, where the answer could have streamed', async () => {
    const agent = await serve({ stream: pieces });
    const { frame } = await sdkSendRemote(
      agent.http,
      pythonMessage(agent.did, { task: 'count' }, { now: Date.now(), secret: SECRET }),
    );
    // The fake receiver's whole answer, not the streamed one: the stream is not asked for.
    expect(roarMessage.parse(JSON.parse(frame)).payload).toEqual({ status: 'ok', result: 'turn 1: count' });
    // A socket kept open gets that one frame per message, and nothing else.
    const socket = await open(`${agent.url}/roar/ws`);
    const first = await exchange(
      socket,
      pythonMessage(agent.did, { task: 'count' }, { now: Date.now(), secret: SECRET }),
    );
    const second = await exchange(
      socket,
      pythonMessage(
        agent.did,
        { protocolHash: PROTOCOL_HASH, body: { value: 1 } },
        { now: Date.now(), secret: SECRET },
      ),
    );
    socket.close();
    expect([...first, ...second].map((text) => roarMessage.parse(JSON.parse(text)).payload)).toEqual([
      { status: 'ok', result: 'turn 1: count' },
      { status: 'ok', result: { converted: true, input: { value: 1 } } },
    ]);
  });

  it("refuses a message with an error frame, as ROAR's router does: not a ROARMessage, so ws_send raises, as http_send does on a 4xx", async () => {
    const agent = await serve();
    const { frame } = await sdkSendRemote(
      agent.http,
      pythonMessage(agent.did, { task: 'x' }, { now: Date.now(), secret: 'not ours' }),
    );
    // ROAR's router (router.py) sends `{"error": "signature_invalid"}`; ours names the same code under `error`.
    expect(JSON.parse(frame)).toEqual({
      type: 'error',
      error: 'signature_invalid',
      message: 'HMAC signature verification failed',
    });
    expect(roarMessage.safeParse(JSON.parse(frame)).success).toBe(false);
  });

  it('streams when asked: ?deltas=true gives delta frames, then the reply marked done; context.deltas decides per message', async () => {
    const agent = await serve({ stream: pieces });
    const socket = await open(`${agent.url}/roar/ws?deltas=true`);
    const streamed = await exchange(
      socket,
      pythonMessage(agent.did, { task: 'count' }, { now: Date.now(), secret: SECRET }),
    );
    expect(streamed.slice(0, 2).map((frame) => roarDeltaFrame.parse(JSON.parse(frame)).delta)).toEqual(['One', ' two']);
    expect(streamed).toHaveLength(3);
    expect(roarDoneFrame.parse(JSON.parse(streamed[2]!)).payload).toEqual({ status: 'ok', result: 'One two' });
    expect(replyVerifies(streamed[2]!, (body, signature) => verifyHmac(body, signature, SECRET))).toBe(true);
    // One message without deltas on a socket that streams: the bare reply.
    const whole = await exchange(
      socket,
      pythonMessage(agent.did, { task: 'count' }, { now: Date.now(), secret: SECRET, context: { deltas: false } }),
    );
    expect(whole.map((frame) => roarMessage.parse(JSON.parse(frame)).intent)).toEqual(['respond']);
    socket.close();
    // One message asking for deltas on a socket that did not.
    const plain = await open(`${agent.url}/roar/ws`);
    const asked = await exchange(
      plain,
      pythonMessage(agent.did, { task: 'count' }, { now: Date.now(), secret: SECRET, context: { deltas: true } }),
    );
    plain.close();
    expect(asked.map((frame) => (JSON.parse(frame) as { type: string }).type)).toEqual(['delta', 'delta', 'done']);
  });

  it("takes the token from the upgrade's Authorization header instead of an auth frame, when a client can set one", async () => {
    const agent = await serve({ tokens: ['t0k'] });
    const socket = await open(`${agent.url}/roar/ws`, { authorization: 'Bearer t0k' });
    const frames = await exchange(
      socket,
      pythonMessage(agent.did, { task: 'no auth frame' }, { now: Date.now(), secret: SECRET }),
    );
    socket.close();
    expect(roarMessage.parse(JSON.parse(frames[0]!)).payload).toEqual({
      status: 'ok',
      result: 'turn 1: no auth frame',
    });
    // A wrong header is no token: the socket still waits for its auth frame, and a message instead closes it.
    const wrong = await open(`${agent.url}/roar/ws`, { authorization: 'Bearer nope' });
    const closed = new Promise((resolve) => wrong.once('close', resolve));
    wrong.send(pythonMessage(agent.did, { task: 'x' }, { now: Date.now(), secret: SECRET }));
    expect(await closed).toBe(1008);
  });

  it('serves /roar/ws/stream: ROAR StreamEvents (session_id a string, "" for none), filtered by ?session_id, behind the token', async () => {
    const agent = await serve({ tokens: ['t0k'] });
    const refused = new WebSocket(`${agent.url}/roar/ws/stream`);
    const status = await new Promise<number>((resolve) =>
      refused.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0)),
    );
    expect(status).toBe(401);
    expect((await fetch(`${agent.http}/roar/ws/stream`, { headers: { authorization: 'Bearer t0k' } })).status).toBe(
      426,
    );

    const auth = { authorization: 'Bearer t0k' };
    const all = await open(`${agent.url}/roar/ws/stream`, auth);
    const mine = await open(`${agent.url}/roar/ws/stream?session_id=s1`, auth);
    const read = (socket: WebSocket, count: number) =>
      new Promise<unknown[]>((resolve) => {
        const events: unknown[] = [];
        socket.on('message', (data) => events.push(JSON.parse(String(data))) === count && resolve(events));
      });
    const allEvents = read(all, 4);
    const mineEvents = read(mine, 2);
    const post = (body: string) => fetch(`${agent.http}/roar/message`, { method: 'POST', headers: auth, body });
    expect(
      (await post(pythonMessage(agent.did, { task: 'alone' }, { now: Date.now(), secret: SECRET, id: 'msg_alone' })))
        .status,
    ).toBe(200);
    expect(
      (
        await post(
          pythonMessage(
            agent.did,
            { task: 'in s1' },
            { now: Date.now(), secret: SECRET, id: 'msg_s1', context: { session_id: 's1' } },
          ),
        )
      ).status,
    ).toBe(200);
    const events = (await allEvents).map((event) => roarStreamEvent.parse(event));
    expect(events.map((event) => [event.session_id, event.data.task_id, event.data.status])).toEqual([
      ['', 'msg_alone', 'working'],
      ['', 'msg_alone', 'completed'],
      ['s1', 'msg_s1', 'working'],
      ['s1', 'msg_s1', 'completed'],
    ]);
    expect((await mineEvents).map((event) => roarStreamEvent.parse(event).data.task_id)).toEqual(['msg_s1', 'msg_s1']);
    all.close();
    mine.close();
  });
});
