import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { Sender, type SenderStreamEvent } from '../../src/sender/sender.js';
import { startTestAgent, type TestAgent } from '../../src/testing/index.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';

const NOTES =
  '---\nname: Notes\ndescription: Answers in prose.\nmultiround: true\n---\n\nThe sender asks a question in prose; the receiver answers in prose.\n';

async function collect(events: AsyncIterable<SenderStreamEvent>): Promise<SenderStreamEvent[]> {
  const all: SenderStreamEvent[] = [];
  for await (const event of events) all.push(event);
  return all;
}

/** A fetch whose first streamed reply breaks after `events` events, as a dropped connection would. */
function cuttingFetch(events: number) {
  const calls: { method: string; url: string; lastEventId: string | null }[] = [];
  let cut = false;
  const wrapped: typeof fetch = async (input, init) => {
    const headers = new Headers(init?.headers);
    if (headers.get('accept') === 'text/event-stream')
      calls.push({ method: init?.method ?? 'GET', url: String(input), lastEventId: headers.get('last-event-id') });
    const response = await fetch(input, init);
    if (cut || !response.headers.get('content-type')?.includes('text/event-stream')) return response;
    cut = true;
    const reader = response.body!.getReader();
    let seen = 0;
    let text = '';
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (seen >= events) {
          await reader.cancel();
          controller.error(new TypeError('terminated'));
          return;
        }
        const { value, done } = await reader.read();
        if (done) return controller.close();
        text += new TextDecoder().decode(value);
        // Whole events only, so the cut falls between two of them.
        const blocks = text.split('\n\n');
        text = blocks.pop()!;
        const keep = blocks.slice(0, events - seen);
        seen += keep.length;
        if (keep.length) controller.enqueue(new TextEncoder().encode(keep.map((block) => `${block}\n\n`).join('')));
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
  return { fetch: wrapped, calls };
}

describe('sender.stream', () => {
  let agent: TestAgent;
  let folder: Awaited<ReturnType<typeof makeAgentFolder>>;

  beforeAll(async () => {
    folder = await makeAgentFolder({ 'protocols/notes.md': NOTES });
    agent = await startTestAgent({ dir: folder.dir });
  });
  afterAll(async () => {
    await agent.close();
    await folder.cleanup();
  });

  it('yields the deltas as they come, then the whole reply', async () => {
    agent.fake.push({ text: 'It is sunny.', stream: { chunks: ['It ', 'is ', 'sunny.'] } });
    const events = await collect(new Sender({ logger: silentLogger }).stream(agent.url, { body: 'Weather?' }));
    const deltas = events.filter((event) => event.type === 'delta').map((event) => event.delta);
    expect(deltas.length).toBe(3);
    expect(events.at(-1)).toEqual({ type: 'done', result: { body: deltas.join('') } });
  });

  it('resumes once by itself when the connection drops mid-stream, losing and repeating nothing', async () => {
    agent.fake.push({ text: 'one two three four', stream: { chunks: ['one', ' two', ' three', ' four'] } });
    const cutting = cuttingFetch(2);
    const sender = new Sender({ logger: silentLogger, fetch: cutting.fetch });
    const events = await collect(sender.stream(agent.url, { protocol: NOTES, body: 'Count', multiround: true }));
    expect(cutting.calls.map((call) => [call.method, call.lastEventId])).toEqual([
      ['POST', null],
      ['GET', '2'],
    ]);
    expect(events.filter((event) => event.type === 'delta').map((event) => event.delta)).toEqual([
      'one',
      ' two',
      ' three',
      ' four',
    ]);
    const done = events.at(-1)!;
    expect(done.type === 'done' && done.result.body).toBe('one two three four');
  });

  it('throws the peer’s failure as PEER_FAILURE', async () => {
    agent.fake.push({ status: 400 });
    await expect(collect(new Sender({ logger: silentLogger }).stream(agent.url, { body: 'Hi' }))).rejects.toThrow(
      /LLM unavailable/,
    );
  });
});

/** A peer on a raw socket: `answer` writes whatever it likes to the connection of a POST (or nothing at all). */
async function rawPeer(answer: (socket: import('node:net').Socket) => void): Promise<{ url: string; server: Server }> {
  const server = createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', (data: Buffer) => {
      if (data.toString('latin1').startsWith('POST ')) answer(socket);
      else
        socket.end(
          'HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{"status":"failure","error":"Not found"}',
        );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('sender.stream against a hostile peer', () => {
  const servers: Server[] = [];
  afterAll(() => {
    for (const server of servers) server.close();
  });
  const streamFrom = async (answer: Parameters<typeof rawPeer>[0]) => {
    const peer = await rawPeer(answer);
    servers.push(peer.server);
    return collect(new Sender({ llm: null, logger: silentLogger, timeoutMs: 300 }).stream(peer.url, { body: 'Hi' }));
  };

  it('gives up on a peer that never answers, or never finishes a whole reply, after its timeout', async () => {
    await expect(streamFrom(() => {})).rejects.toMatchObject({ code: 'TIMEOUT' });
    await expect(
      streamFrom((socket) =>
        socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"status"'),
      ),
    ).rejects.toMatchObject({ code: 'TIMEOUT' });
    await expect(
      streamFrom((socket) =>
        socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nevent: delta\ndata: {"delta":"a"}\n\n'),
      ),
    ).rejects.toMatchObject({ code: 'TIMEOUT' });
  });

  it('refuses a whole reply over the size cap, and a body cut short, as PEER_FAILURE', async () => {
    await expect(
      streamFrom((socket) =>
        socket.end('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 20000000\r\n\r\n{'),
      ),
    ).rejects.toMatchObject({ code: 'PEER_FAILURE', message: expect.stringMatching(/larger than/) });
    await expect(
      streamFrom((socket) =>
        socket.end('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"status"'),
      ),
    ).rejects.toMatchObject({ name: 'AgoraError', code: 'PEER_FAILURE' });
  });

  it('reads an event whose data is JSON but not an object as an empty one', async () => {
    const events = await streamFrom((socket) =>
      socket.end(
        'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\nevent: delta\ndata: null\n\nevent: done\ndata: {"status":"success","body":"x"}\n\n',
      ),
    );
    expect(events).toEqual([
      { type: 'delta', delta: null },
      { type: 'done', result: { body: 'x' } },
    ]);
  });
});
