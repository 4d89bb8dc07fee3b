// Reads Server-Sent Events off a fetch response, one event (or comment) at a time, for the streaming tests.

/** One parsed event: `comment` set for a comment line (a heartbeat), else its id, name and data. */
export type SseEvent = { id?: string; event: string; data: string; comment?: string };

/** The events of a response body, as they arrive. */
export async function* readSse(response: Response): AsyncGenerator<SseEvent> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event: SseEvent = { event: 'message', data: '' };
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) event.comment = line.slice(1).trim();
          else if (line.startsWith('id: ')) event.id = line.slice(4);
          else if (line.startsWith('event: ')) event.event = line.slice(7);
          else if (line.startsWith('data: ')) data.push(line.slice(6));
        }
        event.data = data.join('\n');
        yield event;
      }
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
    }
  } finally {
    // A reader that stops early closes its connection (the server's stream would otherwise stay open).
    await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}

/** Every event of a response until it ends, heartbeats left out. */
export async function allEvents(response: Response): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const event of readSse(response)) if (event.comment === undefined) events.push(event);
  return events;
}

/** A streamed POST. */
export function postStream(url: string, request: unknown, init: RequestInit = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify(request),
    ...init,
  });
}
