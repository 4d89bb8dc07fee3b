import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startServer, type RunningServer } from '../../src/agent.js';
import { AnthropicModel } from '../../src/llm/anthropic/model.js';
import { silentLogger } from '../../src/log.js';
import { hashText } from '../../src/protocol/document.js';
import { Receiver } from '../../src/receiver.js';
import { FakeAnthropic } from '../../src/testing/index.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';
import { postStream, readSse } from '../helpers/sse.js';

const FLOOD =
  '---\nname: Flood\ndescription: Streams a lot.\nmultiround: true\n---\n\nThe sender sends JSON {"pieces": number}. The receiver replies JSON {"sent": number}.\n';
const FLOOD_ROUTINE = `export default async function* flood(body) {
  const piece = 'x'.repeat(4096);
  for (let index = 0; index < body.pieces; index++) yield piece;
  return { sent: body.pieces };
}
`;
const MAX_BUFFERED = 64 * 1024;

describe('what a stream costs', () => {
  let folder: Awaited<ReturnType<typeof makeAgentFolder>>;
  let fake: FakeAnthropic;
  let receiver: Receiver;
  let server: RunningServer;
  const drops: number[] = [];

  beforeAll(async () => {
    folder = await makeAgentFolder({ 'protocols/flood.md': FLOOD, 'routines/flood.ts': FLOOD_ROUTINE });
    fake = await FakeAnthropic.start();
    receiver = await Receiver.start({
      dir: folder.dir,
      watch: false,
      logger: silentLogger,
      llm: new AnthropicModel({ baseURL: fake.url, apiKey: 'test', maxRetries: 0 }),
    });
    server = await startServer(receiver, {
      port: 0,
      host: '127.0.0.1',
      logger: silentLogger,
      heartbeatMs: 20,
      maxBufferedBytes: MAX_BUFFERED,
      onDrop: (bytes) => drops.push(bytes),
    });
  });
  afterAll(async () => {
    await server.close();
    await receiver.close();
    await fake.close();
    await folder.cleanup();
  });

  it('drops a reader that does not read, buffering no more than its bound, and keeps the turn and its events', async () => {
    // 4 000 events of 4 KiB: far more than the loopback socket's own buffers hold.
    const payload = JSON.stringify({ protocolHash: hashText(FLOOD), multiround: true, body: { pieces: 4000 } });
    const socket = connect(server.port, '127.0.0.1');
    socket.pause();
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(
      `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
    );
    await vi.waitFor(() => expect(drops).toHaveLength(1), { timeout: 10_000 });
    // At most the bound plus one event was left buffered when the connection was dropped.
    expect(drops[0]!).toBeGreaterThan(MAX_BUFFERED);
    expect(drops[0]!).toBeLessThan(MAX_BUFFERED + 8192);
    socket.destroy();
    await closed;
    // The conversation's turn ran to its end without its reader: it was saved, its events kept for resumption.
    await vi.waitFor(async () => expect(await receiver.store.count()).toBe(1));
    expect(receiver.counters.snapshot().queries.routine).toBe(1);
  });

  it('sends a comment heartbeat while waiting for the LLM', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    fake.push({
      text: 'slow answer',
      stream: { chunks: ['slow', ' answer'], delays: (index) => (index === 0 ? gate : 0) },
    });
    // The headers go out when the turn begins, so the heartbeat runs before the first token.
    const events = readSse(await postStream(`${server.url}/`, { body: 'Hi' }));
    const seen: string[] = [];
    for await (const event of events) {
      seen.push(event.comment !== undefined ? `:${event.comment}` : event.event);
      if (event.comment === 'ping') release();
    }
    expect(seen[0]).toBe(':ping');
    expect(seen.filter((name) => !name.startsWith(':'))).toEqual(['delta', 'delta', 'done']);
  });
});
