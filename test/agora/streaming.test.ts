import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { hashText } from '../../src/protocol/document.js';
import { startTestAgent, type TestAgent } from '../../src/testing/index.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';
import { allEvents, postStream, readSse, type SseEvent } from '../helpers/sse.js';

const NOTES =
  '---\nname: Notes\ndescription: Answers in prose.\nmultiround: true\n---\n\nThe sender asks a question in prose; the receiver answers in prose.\n';
const COUNTDOWN =
  '---\nname: Countdown\ndescription: Counts down.\nmultiround: false\n---\n\nThe sender sends JSON {"from": number}. The receiver replies JSON {"done": true}.\n';
const COUNTDOWN_ROUTINE = `export default async function* countdown(body) {
  for (let n = body.from; n > 0; n--) yield n === 1 ? 'one' : { left: n };
  return { done: true, from: body.from };
}
`;

// A tool that waits until its query's signal aborts, and says so; a routine that calls it.
const WAITING_TOOL = `import { z } from 'zod';
import { defineTool } from 'agora-agents';

export default defineTool({
  name: 'wait_for_abort',
  description: 'Waits until the query gives up',
  input: z.object({}),
  run: (_input, context) =>
    new Promise((resolve) => {
      globalThis.agoraTestToolSignal = context.signal ? 'given' : 'none';
      context.signal?.addEventListener('abort', () => {
        globalThis.agoraTestToolSignal = 'aborted';
        resolve({ stopped: true });
      }, { once: true });
    }),
});
`;
const WAITING =
  '---\nname: Waiting\ndescription: Waits.\nmultiround: false\n---\n\nThe sender sends JSON {}. The receiver replies JSON {"stopped": boolean}.\n';
const WAITING_ROUTINE = `export default async function waiting(body, context) {
  return context.tools.wait_for_abort({});
}
`;
const toolSignal = () => (globalThis as { agoraTestToolSignal?: string }).agoraTestToolSignal;

const deltasOf = (events: SseEvent[]) =>
  events
    .filter((event) => event.event === 'delta')
    .map((event) => JSON.parse(event.data) as { delta: unknown; conversationId?: string });

describe('streamed replies (SSE)', () => {
  let agent: TestAgent;
  let folder: Awaited<ReturnType<typeof makeAgentFolder>>;
  const now = () => 1_800_000_000_000;

  beforeAll(async () => {
    folder = await makeAgentFolder({
      'protocols/notes.md': NOTES,
      'protocols/countdown.md': COUNTDOWN,
      'routines/countdown.ts': COUNTDOWN_ROUTINE,
    });
    agent = await startTestAgent({ dir: folder.dir, now });
  });
  afterAll(async () => {
    await agent.close();
    await folder.cleanup();
  });

  it('streams an LLM reply as deltas whose join is the body, then a done equal to the non-streamed reply', async () => {
    agent.fake.push(
      { text: '  Paris is sunny today.\n', stream: { chunks: ['  Par', 'is is ', 'sunny', ' today.', '\n'] } },
      '  Paris is sunny today.\n',
    );
    const response = await postStream(`${agent.url}/`, { body: 'Weather in Paris?' });
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const events = await allEvents(response);
    const deltas = deltasOf(events).map((delta) => delta.delta);
    expect(deltas.length).toBeGreaterThan(2);
    const done = events.at(-1)!;
    expect(done.event).toBe('done');
    expect(events.filter((event) => event.event === 'done')).toHaveLength(1);
    expect(JSON.parse(done.data).body).toBe(deltas.join(''));
    const plain = await fetch(`${agent.url}/`, { method: 'POST', body: JSON.stringify({ body: 'Weather in Paris?' }) });
    expect(done.data).toBe(await plain.text());
    // The fake was asked for a stream only when ours was.
    expect(agent.fake.requests.at(-2)!.body.stream).toBe(true);
  });

  it('streams a routine that is an async generator; without streaming it answers the body', async () => {
    const hash = hashText(COUNTDOWN);
    const events = await allEvents(await postStream(`${agent.url}/`, { protocolHash: hash, body: { from: 3 } }));
    expect(deltasOf(events).map((delta) => delta.delta)).toEqual([{ left: 3 }, { left: 2 }, 'one']);
    expect(events.map((event) => event.id)).toEqual(['1', '2', '3', '4']);
    const plain = await fetch(`${agent.url}/`, {
      method: 'POST',
      body: JSON.stringify({ protocolHash: hash, body: { from: 3 } }),
    });
    expect(await plain.text()).toBe(events.at(-1)!.data);
    expect(JSON.parse(events.at(-1)!.data)).toEqual({ status: 'success', body: { done: true, from: 3 } });
  });

  it('ends with one error event when the LLM fails, and answers non-200 failures as plain JSON', async () => {
    agent.fake.push({ status: 400 });
    const events = await allEvents(await postStream(`${agent.url}/`, { body: 'hi' }));
    expect(events.map((event) => [event.event, event.data])).toEqual([
      ['error', '{"status":"failure","error":"LLM unavailable"}'],
    ]);
    const missing = await postStream(`${agent.url}/conversations/nope`, { body: 'hi' });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ status: 'failure', error: 'Conversation not found' });
  });

  it('numbers a conversation’s events across turns, announces the id first, and resumes what was missed', async () => {
    agent.fake.push({ text: 'One two three', stream: { chunks: ['One', ' two', ' three'] } });
    const first = await allEvents(
      await postStream(`${agent.url}/`, { protocolHash: hashText(NOTES), multiround: true, body: 'Count' }),
    );
    const id = JSON.parse(first[0]!.data).conversationId as string;
    expect(id).toMatch(/^[A-Za-z0-9_-]{24}$/);
    expect(first.map((event) => Number(event.id))).toEqual([1, 2, 3, 4]);
    expect(
      deltasOf(first)
        .slice(1)
        .every((delta) => delta.conversationId === undefined),
    ).toBe(true);
    agent.fake.push({ text: 'Four five', stream: { chunks: ['Four', ' five'] } });
    const second = await allEvents(await postStream(`${agent.url}/conversations/${id}`, { body: 'More' }));
    expect(second.map((event) => Number(event.id))).toEqual([5, 6, 7]);
    expect(deltasOf(second)[0]!.conversationId).toBeUndefined();

    const resumed = await allEvents(
      await fetch(`${agent.url}/conversations/${id}/events`, { headers: { 'last-event-id': '5' } }),
    );
    expect(resumed.map((event) => [event.id, event.event])).toEqual([
      ['6', 'delta'],
      ['7', 'done'],
    ]);
    expect(resumed.at(-1)!.data).toBe(second.at(-1)!.data);
    const latest = await allEvents(await fetch(`${agent.url}/conversations/${id}/events`));
    expect(latest.map((event) => event.id)).toEqual(['5', '6', '7']);
    const earlier = await allEvents(
      await fetch(`${agent.url}/conversations/${id}/events`, { headers: { 'last-event-id': '2' } }),
    );
    expect(earlier.map((event) => event.id)).toEqual(['3', '4']);
    expect(
      await allEvents(await fetch(`${agent.url}/conversations/${id}/events`, { headers: { 'last-event-id': '7' } })),
    ).toEqual([]);

    for (const bad of ['x', '-1', '99']) {
      const response = await fetch(`${agent.url}/conversations/${id}/events`, { headers: { 'last-event-id': bad } });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { status: string }).status).toBe('failure');
    }
    expect((await fetch(`${agent.url}/conversations/unknown_id/events`)).status).toBe(404);
    await agent.receiver.end(id);
    expect(await (await fetch(`${agent.url}/conversations/${id}/events`)).json()).toEqual({
      status: 'failure',
      error: 'Conversation expired',
    });
  });

  it('resumes a turn still running: the missed events, then the rest live, none repeated', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    agent.fake.push({
      text: 'alpha beta gamma',
      stream: { chunks: ['alpha', ' beta', ' gamma'], delays: (index) => (index === 2 ? gate : 0) },
    });
    const controller = new AbortController();
    const response = await postStream(
      `${agent.url}/`,
      { protocolHash: hashText(NOTES), multiround: true, body: 'Go' },
      { signal: controller.signal },
    );
    const events = readSse(response);
    const first = (await events.next()).value as SseEvent;
    const id = JSON.parse(first.data).conversationId as string;
    controller.abort();
    await events.return(undefined).catch(() => undefined);
    const resumed = await fetch(`${agent.url}/conversations/${id}/events`, { headers: { 'last-event-id': first.id! } });
    const live = readSse(resumed);
    const next = (await live.next()).value as SseEvent;
    expect(next.id).toBe(String(Number(first.id) + 1));
    release();
    const rest: SseEvent[] = [next];
    for await (const event of live) if (event.comment === undefined) rest.push(event);
    expect(rest.map((event) => event.event)).toEqual(['delta', 'delta', 'done']);
    expect(
      [first, ...rest]
        .filter((event) => event.event === 'delta')
        .map((event) => JSON.parse(event.data).delta)
        .join(''),
    ).toBe('alpha beta gamma');
    // The turn ran on without its client: the conversation was saved.
    expect((await agent.receiver.store.get(id)).turn).toBe(1);
  });

  it('aborts a single-round LLM call when its client goes away', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    agent.fake.push({
      text: 'never finished',
      stream: { chunks: ['never', ' finished'], delays: (index) => (index === 1 ? gate : 0) },
    });
    const before = agent.receiver.counters.snapshot().abortedCalls;
    const controller = new AbortController();
    const events = readSse(await postStream(`${agent.url}/`, { body: 'Go' }, { signal: controller.signal }));
    expect(((await events.next()).value as SseEvent).event).toBe('delta');
    controller.abort();
    await events.return(undefined).catch(() => undefined);
    await agent.fake.requests.at(-1)!.closed;
    release();
    await vi.waitFor(() => expect(agent.receiver.counters.snapshot().abortedCalls).toBe(before + 1));
    expect(await agent.receiver.metrics()).toMatch(/agora_stream_aborted_total 1/);
  });
});

describe("a streamed routine's tools", () => {
  let agent: TestAgent;
  let folder: Awaited<ReturnType<typeof makeAgentFolder>>;

  beforeAll(async () => {
    folder = await makeAgentFolder({
      'protocols/waiting.md': WAITING,
      'routines/waiting.ts': WAITING_ROUTINE,
      'tools/wait-for-abort.ts': WAITING_TOOL,
    });
    agent = await startTestAgent({ dir: folder.dir });
  });
  afterAll(async () => {
    await agent.close();
    await folder.cleanup();
  });

  it('get a signal, made when the tool reads it, that aborts when the client goes away', async () => {
    const controller = new AbortController();
    const response = await postStream(
      `${agent.url}/`,
      { protocolHash: hashText(WAITING), body: {} },
      { signal: controller.signal },
    );
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    await vi.waitFor(() => expect(toolSignal()).toBe('given'));
    controller.abort();
    await response.body?.cancel().catch(() => undefined);
    await vi.waitFor(() => expect(toolSignal()).toBe('aborted'));
  });
});
