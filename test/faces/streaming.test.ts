import { ClientFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestAgent, type TestAgent } from '../../src/testing/index.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';
import { roarMessage } from './_peer-schemas.js';
import { sdkSendRemote } from '../bindings/roar/_messages.js';

// The faces on a whole agent: the LLM's text reaches an A2A client as it is written, not once it is done.
describe('streaming through the faces', () => {
  let agent: TestAgent;
  let folder: Awaited<ReturnType<typeof makeAgentFolder>>;

  beforeAll(async () => {
    folder = await makeAgentFolder({});
    agent = await startTestAgent({ dir: folder.dir });
  });
  afterAll(async () => {
    await agent.close();
    await folder.cleanup();
  });

  it("gives @a2a-js/sdk's message/stream the LLM's pieces while the LLM still writes, joining to the answer", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // The last piece waits for the test: updates seen before it prove the pieces are not sent at the end.
    agent.fake.push({
      text: 'Paris is sunny today.',
      stream: { chunks: ['Paris', ' is', ' sunny', ' today.'], delays: (index) => (index === 3 ? gate : 0) },
    });
    const client = await new ClientFactory().createFromUrl(agent.url);
    const message = {
      message: { messageId: 'm1', role: 1, parts: [{ content: { $case: 'text', value: 'Weather in Paris?' } }] },
    } as never;
    const pieces: string[] = [];
    let final: any;
    for await (const event of client.sendMessageStream(message) as AsyncIterable<any>) {
      const { $case, value } = event.payload;
      if ($case === 'artifactUpdate') {
        pieces.push(value.artifact.parts[0].content.value);
        if (pieces.length === 3) release();
      }
      if ($case === 'statusUpdate') final = value;
    }
    expect(pieces).toEqual(['Paris', ' is', ' sunny', ' today.']);
    expect(final.status.state).toBe(3);
  });

  it("answers ROAR's SDK over the WebSocket with one frame, the reply ROARMessage, for an LLM answer the LLM streams", async () => {
    agent.fake.push({ text: 'One two three', stream: { chunks: ['One', ' two', ' three'] } });
    const did = ((await (await fetch(`${agent.url}/roar/card`)).json()) as { identity: { did: string } }).identity.did;
    const message = JSON.stringify({
      roar: '1.0',
      id: 'msg_sdk',
      from: { did: 'did:roar:agent:tester-0123456789abcdef' },
      to: { did },
      intent: 'delegate',
      payload: { task: 'count' },
      context: {},
      auth: {},
      timestamp: Date.now() / 1000,
    });
    // `send_remote` takes the WebSocket (the card names it) and `ws_send` reads one frame: it must be the reply.
    const { transport, frame } = await sdkSendRemote(agent.url, message);
    expect(transport).toBe('websocket');
    expect(roarMessage.parse(JSON.parse(frame))).toMatchObject({
      intent: 'respond',
      payload: { status: 'ok', result: 'One two three' },
    });
  });

  it('streams over ROAR’s WebSocket in pieces when asked (?deltas=true)', async () => {
    agent.fake.push({ text: 'One two three', stream: { chunks: ['One', ' two', ' three'] } });
    const card = (await (await fetch(`${agent.url}/roar/card`)).json()) as { identity: { did: string } };
    const { did } = card.identity;
    expect(did).toMatch(/^did:roar:agent:/);
    const socket = new WebSocket(`${agent.url.replace('http', 'ws')}/roar/ws?deltas=true`);
    const frames: { type: string; delta?: string; payload?: { result?: string } }[] = [];
    await new Promise((resolve) => socket.once('open', resolve));
    const done = new Promise<void>((resolve, reject) => {
      socket.on('message', (data) => {
        const frame = JSON.parse(String(data)) as { type: string; delta?: string; message?: string };
        frames.push(frame);
        if (frame.type === 'done') resolve();
        if (frame.type === 'error') reject(new Error(frame.message));
      });
    });
    socket.send(
      JSON.stringify({
        roar: '1.0',
        id: 'msg_1',
        from: { did: 'did:roar:agent:tester-0123456789abcdef' },
        to: { did },
        intent: 'delegate',
        payload: { task: 'count' },
        context: {},
        auth: {},
        timestamp: Date.now() / 1000,
      }),
    );
    await done;
    socket.close();
    expect(frames.filter((frame) => frame.type === 'delta').map((frame) => frame.delta)).toEqual([
      'One',
      ' two',
      ' three',
    ]);
    // The last frame is the reply ROARMessage itself, marked done.
    expect(frames.map((frame) => frame.type).slice(-2)).toEqual(['delta', 'done']);
    expect(frames.at(-1)!.payload?.result).toBe('One two three');
  });

  it('answers a WebSocket upgrade to a path no face serves with 404 and closes it', async () => {
    const socket = new WebSocket(`${agent.url.replace('http', 'ws')}/nowhere`);
    const status = await new Promise<number>((resolve, reject) => {
      socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
      socket.once('open', () => reject(new Error('opened')));
      socket.once('error', reject);
    });
    expect(status).toBe(404);
  });
});
