import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { verifyHmac } from '../../../src/faces/roar/signing.js';
import type { StreamAnswer } from '../../../src/faces/stream.js';
import { makeFaces, PROTOCOL_HASH, serveFaces, type FaceTestOptions } from '../_helpers.js';
import { roarDeltaFrame, roarDoneFrame, roarMessage, roarStreamEvent } from '../_peer-schemas.js';
import { pythonMessage, replyVerifies } from './_messages.js';

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
  it('answers a whole answer with one frame: the signed reply ROARMessage itself, marked done (what ws_send reads)', async () => {
    const agent = await serve();
    const socket = await open(`${agent.url}/roar/ws`);
    const frames = await exchange(socket, pythonMessage(agent.did, { protocolHash: PROTOCOL_HASH, body: { value: 3 } }, { now: Date.now(), secret: SECRET }));
    socket.close();
    expect(frames).toHaveLength(1);
    // `ws_send` validates the first frame as a ROARMessage; `type` is one field more, which it ignores.
    const { type, ...message } = roarDoneFrame.parse(JSON.parse(frames[0]!));
    expect(type).toBe('done');
    expect(roarMessage.parse(message)).toMatchObject({ intent: 'respond', from: { did: agent.did }, payload: { status: 'ok', result: { converted: true, input: { value: 3 } } } });
    expect(replyVerifies(frames[0]!, (body, signature) => verifyHmac(body, signature, SECRET))).toBe(true);
  });

  it('sends a streamed answer as delta frames, then the done frame; ?deltas=false or context.deltas false turn them off', async () => {
    const agent = await serve({ stream: pieces });
    const socket = await open(`${agent.url}/roar/ws`);
    const streamed = await exchange(socket, pythonMessage(agent.did, { task: 'count' }, { now: Date.now(), secret: SECRET }));
    expect(streamed.slice(0, 2).map((frame) => roarDeltaFrame.parse(JSON.parse(frame)).delta)).toEqual(['One', ' two']);
    expect(streamed).toHaveLength(3);
    expect(roarDoneFrame.parse(JSON.parse(streamed[2]!)).payload).toEqual({ status: 'ok', result: 'One two' });
    // One message without deltas on a socket that streams.
    const whole = await exchange(socket, pythonMessage(agent.did, { task: 'count' }, { now: Date.now(), secret: SECRET, context: { deltas: false } }));
    expect(whole.map((frame) => (JSON.parse(frame) as { type: string }).type)).toEqual(['done']);
    socket.close();
    // A socket without deltas at all.
    const quiet = await open(`${agent.url}/roar/ws?deltas=false`);
    const frames = await exchange(quiet, pythonMessage(agent.did, { task: 'count' }, { now: Date.now(), secret: SECRET }));
    quiet.close();
    expect(frames).toHaveLength(1);
    expect(roarDoneFrame.parse(JSON.parse(frames[0]!)).intent).toBe('respond');
  });

  it('takes the token from the upgrade\'s Authorization header instead of an auth frame, when a client can set one', async () => {
    const agent = await serve({ tokens: ['t0k'] });
    const socket = await open(`${agent.url}/roar/ws`, { authorization: 'Bearer t0k' });
    const frames = await exchange(socket, pythonMessage(agent.did, { task: 'no auth frame' }, { now: Date.now(), secret: SECRET }));
    socket.close();
    expect(roarDoneFrame.parse(JSON.parse(frames[0]!)).payload).toEqual({ status: 'ok', result: 'turn 1: no auth frame' });
    // A wrong header is no token: the socket still waits for its auth frame, and a message instead closes it.
    const wrong = await open(`${agent.url}/roar/ws`, { authorization: 'Bearer nope' });
    const closed = new Promise((resolve) => wrong.once('close', resolve));
    wrong.send(pythonMessage(agent.did, { task: 'x' }, { now: Date.now(), secret: SECRET }));
    expect(await closed).toBe(1008);
  });

  it('serves /roar/ws/stream: ROAR StreamEvents (session_id a string, "" for none), filtered by ?session_id, behind the token', async () => {
    const agent = await serve({ tokens: ['t0k'] });
    const refused = new WebSocket(`${agent.url}/roar/ws/stream`);
    const status = await new Promise<number>((resolve) => refused.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0)));
    expect(status).toBe(401);
    expect((await fetch(`${agent.http}/roar/ws/stream`, { headers: { authorization: 'Bearer t0k' } })).status).toBe(426);

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
    expect((await post(pythonMessage(agent.did, { task: 'alone' }, { now: Date.now(), secret: SECRET, id: 'msg_alone' }))).status).toBe(200);
    expect((await post(pythonMessage(agent.did, { task: 'in s1' }, { now: Date.now(), secret: SECRET, id: 'msg_s1', context: { session_id: 's1' } }))).status).toBe(200);
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
