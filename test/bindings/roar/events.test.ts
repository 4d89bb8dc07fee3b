import { describe, expect, it } from 'vitest';
import { RoarEvents } from '../../../src/bindings/roar/events.js';
import { makeFaces, serveFaces } from '../../faces/_helpers.js';

const message = (to: string, id: string, session: string) =>
  JSON.stringify({
    roar: '1.0',
    id,
    from: { did: 'did:roar:agent:sender-0123456789abcdef' },
    to: { did: to },
    intent: 'delegate',
    payload: { task: 'hi' },
    context: { session_id: session },
    auth: {},
    timestamp: 1_710_000_000,
  });

/** Reads SSE text from a response until `count` events came. */
async function readEvents(response: Response, count: number): Promise<Record<string, any>[]> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = '';
  const events: Record<string, any>[] = [];
  while (events.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
    const blocks = text.split('\n\n');
    text = blocks.pop()!;
    for (const block of blocks) {
      const data = block.split('\n').find((line) => line.startsWith('data: '));
      if (data) events.push(JSON.parse(data.slice(6)));
    }
  }
  await reader.cancel();
  return events;
}

describe('ROAR events (GET /roar/events)', () => {
  it("needs the token, then streams the tasks' statuses of a session as ROAR StreamEvents, statuses only", async () => {
    const faces = makeFaces({ tokens: ['t0k'] });
    const served = await serveFaces(faces);
    try {
      expect((await fetch(`${served.url}/roar/events`)).status).toBe(401);
      const did = (await faces.identity()).did;
      const response = await fetch(`${served.url}/roar/events?session_id=s1`, {
        headers: { authorization: 'Bearer t0k' },
      });
      expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
      const reading = readEvents(response, 2);
      const post = (id: string, session: string) =>
        fetch(`${served.url}/roar/message`, {
          method: 'POST',
          headers: { authorization: 'Bearer t0k' },
          body: message(did, id, session),
        });
      expect((await post('msg_other', 's2')).status).toBe(200); // another session: not this listener's
      expect((await post('msg_mine', 's1')).status).toBe(200);
      const events = await reading;
      expect(events.map((event) => [event.type, event.data.task_id, event.data.status])).toEqual([
        ['task_update', 'msg_mine', 'working'],
        ['task_update', 'msg_mine', 'completed'],
      ]);
      expect(events[0]).toMatchObject({ source: did, session_id: 's1' });
      expect(typeof events[0]!.timestamp).toBe('number');
      expect(JSON.stringify(events)).not.toContain('hi'); // the peer's text stays out of the feed
    } finally {
      await served.close();
    }
  });

  it('refuses listeners past the cap with 503, and drops one that falls behind', async () => {
    const faces = makeFaces({ roarEvents: { maxSubscribers: 1 } });
    const served = await serveFaces(faces);
    try {
      const first = await fetch(`${served.url}/roar/events`);
      expect(first.status).toBe(200);
      const second = await fetch(`${served.url}/roar/events`);
      expect(second.status).toBe(503);
      expect(second.headers.get('retry-after')).toBe('5');
      await first.body!.cancel();
    } finally {
      await served.close();
    }

    const events = new RoarEvents({ maxQueued: 3 });
    const feed = events.subscribe(undefined)!.frames;
    expect((await feed.next()).value).toContain(': roar events');
    for (let index = 0; index < 5; index++)
      events.publish({
        type: 'task_update',
        source: 'did:x',
        session_id: '',
        data: { task_id: String(index) },
        timestamp: 0,
      });
    // Three were queued, the fourth found the queue full: the listener is dropped, nothing more is held for it.
    expect(await feed.next()).toEqual({ value: undefined, done: true });
    expect(events.subscribers).toBe(0);
  });
});
