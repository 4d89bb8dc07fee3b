// Streamed replies on the sender's side: Server-Sent Events read as they come, resumed once on a dropped connection.
import { AgoraError, isAgoraError } from '../errors.js';
import type { HttpClient } from '../net/client.js';
import { networkError } from '../net/failure.js';
import { jsonText, type JsonValue } from '../schemas.js';
import { queryResult, type QueryResult } from './replies.js';

/** One event of a streamed reply as the sender yields it: pieces of the reply, then the whole reply. */
export type SenderStreamEvent = { type: 'delta'; delta: JsonValue } | { type: 'done'; result: QueryResult };

/** How an event stream is read: the bound between two pieces, and the caller's signal. */
export type StreamOptions = {
  idleTimeoutMs: number;
  signal?: AbortSignal | undefined;
  /** Unused: kept so the peer clients' calls type-check. */
  fetch?: typeof fetch;
};

// Bounds on what a peer may send: one event's size and the whole stream's.
const MAX_EVENT_BYTES = 4 * 1024 * 1024;
const MAX_STREAM_BYTES = 64 * 1024 * 1024;

export type RawEvent = { id?: string; event: string; data: string };

/** Reads SSE blocks off a body (the sender's one SSE reader, also used by the ROAR client), each chunk within `idleTimeoutMs` of the last; throws on a stalled or oversized stream. */
export async function* readEvents(
  body: ReadableStream<Uint8Array>,
  what: string,
  options: StreamOptions,
): AsyncGenerator<RawEvent> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let total = 0;
  try {
    for (;;) {
      let end: number;
      while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
        const event: RawEvent = { event: 'message', data: '' };
        const data: string[] = [];
        for (const line of block.split(/\r?\n/)) {
          if (line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'id') event.id = value;
          else if (field === 'event') event.event = value;
          else if (field === 'data') data.push(value);
        }
        event.data = data.join('\n');
        if (data.length) yield event;
      }
      if (buffer.length > MAX_EVENT_BYTES)
        throw new AgoraError('PEER_FAILURE', `${what}: an event larger than ${MAX_EVENT_BYTES} bytes`);
      let timer: NodeJS.Timeout | undefined;
      const idle = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new AgoraError('TIMEOUT', `${what}: nothing received for ${options.idleTimeoutMs} ms`)),
          options.idleTimeoutMs,
        );
      });
      try {
        const { value, done } = await Promise.race([reader.read(), idle]);
        if (done) return;
        total += value.length;
        if (total > MAX_STREAM_BYTES)
          throw new AgoraError('PEER_FAILURE', `${what}: a stream larger than ${MAX_STREAM_BYTES} bytes`);
        buffer += value;
      } finally {
        clearTimeout(timer);
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

function parseJson(what: string, data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    throw new AgoraError('PEER_FAILURE', `${what}: an event that is not JSON: ${data.slice(0, 80)}`);
  }
}

/**
 * Posts a query or a turn asking for a stream and yields its deltas, then `done` with the whole reply. A peer that
 * does not stream answers in one delta (the body's text) and `done`. When the connection drops mid-stream of a
 * conversation, it resumes once from the last event received (`GET /conversations/:id/events`, `Last-Event-ID`).
 */
export async function* streamPost(
  client: HttpClient,
  base: string,
  path: string,
  payload: Record<string, unknown>,
  options: StreamOptions,
): AsyncGenerator<SenderStreamEvent> {
  const url = `${base}${path}`;
  let conversationId = path.startsWith('/conversations/') ? decodeURIComponent(path.slice(15)) : undefined;
  let lastId: string | undefined;
  let resumed = false;
  let method = 'POST';
  let target = url;
  let headers: Record<string, string> = { accept: 'text/event-stream', 'content-type': 'application/json' };
  let body: string | undefined = JSON.stringify(payload);
  for (;;) {
    const what = `${method} ${target}`;
    // A peer that never answers, or answers whole but never finishes its body, is cut off like any other exchange;
    // an event stream is bounded by its idle timer instead, once its headers came.
    const reply = await client.request(method, target, {
      headers,
      body,
      signal: options.signal,
      timeoutMs: options.idleTimeoutMs,
      streams: true,
    });
    if (!reply.body) {
      // A peer that does not stream (or a failure before the stream began) answers with its JSON, size-capped.
      const result = queryResult(method, target, reply.status, parseJson(what, reply.bytes.toString('utf8')));
      if (method === 'POST') {
        const whole = jsonText(result.body);
        if (whole) yield { type: 'delta', delta: result.body };
      }
      yield { type: 'done', result };
      return;
    }
    let final: unknown;
    let dropped: unknown;
    try {
      for await (const event of readEvents(reply.body, what, options)) {
        if (event.id !== undefined) lastId = event.id;
        const data = parseJson(what, event.data);
        const fields = (typeof data === 'object' && data !== null ? data : {}) as {
          delta?: JsonValue;
          conversationId?: unknown;
        };
        if (typeof fields.conversationId === 'string') conversationId = fields.conversationId;
        if (event.event === 'delta') yield { type: 'delta', delta: fields.delta ?? null };
        else if (event.event === 'done' || event.event === 'error') {
          final = data;
          break;
        }
      }
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      // What the peer sent wrong is final; a dropped or stalled connection may be resumed.
      if (error instanceof AgoraError && error.code === 'PEER_FAILURE') throw error;
      dropped = error;
    }
    if (final !== undefined) {
      yield { type: 'done', result: queryResult(method, target, reply.status, final) };
      return;
    }
    if (resumed || conversationId === undefined || lastId === undefined) {
      throw dropped === undefined
        ? new AgoraError('PEER_FAILURE', `${method} ${target}: the stream ended before its reply`)
        : networkError((reason) => `${method} ${target}: ${reason}`, dropped);
    }
    // The stream ended (or broke) before its reply: resume once where it stopped.
    resumed = true;
    method = 'GET';
    target = `${base}/conversations/${encodeURIComponent(conversationId)}/events`;
    headers = { accept: 'text/event-stream', 'last-event-id': lastId };
    body = undefined;
  }
}
