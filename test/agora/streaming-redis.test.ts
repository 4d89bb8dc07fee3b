import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisConversationStore } from '../../src/conversation/redis.js';
import { hashText } from '../../src/protocol/document.js';
import { FakeAnthropic, startTestAgent, type TestAgent } from '../../src/testing/index.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';
import { useTestRedis } from '../helpers/redis.js';
import { postStream, readSse, type SseEvent } from '../helpers/sse.js';

const url = process.env.AGORA_TEST_REDIS_URL;
const describeRedis = url ? describe : describe.skip;
const title = url
  ? 'streams resumed on another process (Redis)'
  : 'streams resumed on another process (skipped: set AGORA_TEST_REDIS_URL)';
const NOTES =
  '---\nname: Notes\ndescription: Answers in prose.\nmultiround: true\n---\n\nThe sender asks a question in prose; the receiver answers in prose.\n';

describeRedis(title, () => {
  const redis = useTestRedis(url ?? 'redis://127.0.0.1:1');
  let fake: FakeAnthropic;
  let folder: Awaited<ReturnType<typeof makeAgentFolder>>;
  let first: TestAgent;
  let second: TestAgent;

  beforeAll(async () => {
    fake = await FakeAnthropic.start();
    folder = await makeAgentFolder({ 'protocols/notes.md': NOTES });
    const prefix = redis.freshPrefix();
    // Two receivers, each with its own connection, as two processes behind a load balancer would have.
    first = await startTestAgent({
      dir: folder.dir,
      fake,
      store: new RedisConversationStore(redis.connect(), { prefix }),
    });
    second = await startTestAgent({
      dir: folder.dir,
      fake,
      store: new RedisConversationStore(redis.connect(), { prefix }),
    });
  });
  afterAll(async () => {
    await first?.close();
    await second?.close();
    await fake?.close();
    await folder?.cleanup();
  });

  it('loses no event and repeats none when a stream cut on one process is resumed on the other', async () => {
    const gates: (() => void)[] = [];
    const pieces = ['The ', 'rest ', 'comes ', 'later.'];
    fake.push({
      text: pieces.join(''),
      stream: {
        chunks: pieces,
        delays: (index) => (index < 2 ? 0 : new Promise<void>((resolve) => gates.push(resolve))),
      },
    });
    const controller = new AbortController();
    const cut = readSse(
      await postStream(
        `${first.url}/`,
        { protocolHash: hashText(NOTES), multiround: true, body: 'Go' },
        { signal: controller.signal },
      ),
    );
    const before: SseEvent[] = [(await cut.next()).value as SseEvent, (await cut.next()).value as SseEvent];
    const conversationId = JSON.parse(before[0]!.data).conversationId as string;
    controller.abort();
    await cut.return(undefined).catch(() => undefined);

    const resumed = readSse(
      await fetch(`${second.url}/conversations/${conversationId}/events`, {
        headers: { 'last-event-id': before[1]!.id! },
      }),
    );
    const pending = resumed.next();
    // The resumer blocks in XREAD on the second process; the turn goes on on the first.
    gates.shift()!();
    const after: SseEvent[] = [(await pending).value as SseEvent];
    gates.shift()!();
    for await (const event of resumed) if (event.comment === undefined) after.push(event);

    const all = [...before, ...after];
    expect(all.map((event) => Number(event.id))).toEqual([1, 2, 3, 4, 5]);
    // Trailing white space waits for what follows it (the reply is trimmed), so the pieces shift but join the same.
    expect(all.filter((event) => event.event === 'delta').map((event) => JSON.parse(event.data).delta)).toEqual([
      'The',
      ' rest',
      ' comes',
      ' later.',
    ]);
    expect(all.at(-1)!.event).toBe('done');
    expect(JSON.parse(all.at(-1)!.data)).toMatchObject({
      status: 'success',
      body: 'The rest comes later.',
      conversationId,
    });
    // The turn was saved by the first process, so the second serves the next turn with ids continuing.
    fake.push('Next.');
    const next: SseEvent[] = [];
    for await (const event of readSse(
      await postStream(`${second.url}/conversations/${conversationId}`, { body: 'And?' }),
    ))
      next.push(event);
    expect(next.map((event) => Number(event.id))).toEqual([6, 7, 8]);
  });
});
