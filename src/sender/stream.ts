// Streamed replies on the sender's side: Server-Sent Events read as they come, resumed once on a dropped connection.
import { AgoraError, networkFailure } from '../errors.js';
import { jsonText, peerResponseSchema, type JsonValue } from '../schemas.js';
import { MAX_REPLY_BYTES, peerFailure, readCapped, type QueryResult } from './transport.js';

/** One event of a streamed reply as the sender yields it: pieces of the reply, then the whole reply. */
export type SenderStreamEvent = { type: 'delta'; delta: JsonValue } | { type: 'done'; result: QueryResult };

/**
 * What a stream needs: the wire, and its time bound: until the reply's headers (and the whole body of a peer that
 * does not stream), then between two pieces of an event stream.
 */
export type StreamOptions = {
  fetch: typeof fetch;
  idleTimeoutMs: number;
  signal?: AbortSignal | undefined;
  headers?: Record<string, string>;
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

/** A peer's whole reply (a `done` event, or the JSON of a peer that does not stream) as a result, or its failure. */
function toResult(method: string, url: string, status: number, json: unknown): QueryResult {
  const parsed = peerResponseSchema.safeParse(json);
  if (!parsed.success)
    throw new AgoraError('PEER_FAILURE', `${method} ${url}: HTTP ${status}, not an Agora reply`, { status });
  const reply = parsed.data;
  if (reply.status === 'failure') throw peerFailure(method, url, status, reply.error);
  if (reply.status === 'error') throw peerFailure(method, url, status, reply.message);
  return {
    body: (reply.body ?? null) as JsonValue,
    ...(reply.conversationId ? { conversationId: reply.conversationId } : {}),
    ...(reply.conversationExpires !== undefined && Number.isFinite(reply.conversationExpires)
      ? { conversationExpires: reply.conversationExpires }
      : {}),
  };
}

/**
 * Posts a query or a turn asking for a stream and yields its deltas, then `done` with the whole reply. A peer that
 * does not stream answers in one delta (the body's text) and `done`. When the connection drops mid-stream of a
 * conversation, it resumes once from the last event received (`GET /conversations/:id/events`, `Last-Event-ID`).
 */
export async function* streamPost(
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
  let headers: Record<string, string> = {
    ...options.headers,
    accept: 'text/event-stream',
    'content-type': 'application/json',
  };
  let body: string | undefined = JSON.stringify(payload);
  for (;;) {
    const what = `${method} ${target}`;
    // A peer that never answers, or answers whole but never finishes its body, is cut off like any other exchange;
    // an event stream is bounded by its idle timer instead, once its headers came.
    const attempt = new AbortController();
    const deadline = setTimeout(
      () => attempt.abort(new AgoraError('TIMEOUT', `${what}: no reply within ${options.idleTimeoutMs} ms`)),
      options.idleTimeoutMs,
    );
    const fail = (error: unknown): never => {
      if (options.signal?.aborted) throw options.signal.reason;
      if (attempt.signal.aborted) throw attempt.signal.reason;
      throw wrap(error, what);
    };
    let response: Response;
    try {
      response = await options.fetch(target, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
        signal: options.signal ? AbortSignal.any([options.signal, attempt.signal]) : attempt.signal,
        redirect: 'manual',
      });
    } catch (error) {
      clearTimeout(deadline);
      return fail(error);
    }
    const type = response.headers.get('content-type') ?? '';
    if (!type.includes('text/event-stream')) {
      // A peer that does not stream (or a failure before the stream began) answers with its JSON, size-capped.
      let text: string;
      try {
        text = (await readCapped(response, MAX_REPLY_BYTES, what)).toString('utf8');
      } catch (error) {
        return fail(error);
      } finally {
        clearTimeout(deadline);
      }
      const result = toResult(method, target, response.status, parseJson(what, text));
      if (method === 'POST') {
        const whole = jsonText(result.body);
        if (whole) yield { type: 'delta', delta: result.body };
      }
      yield { type: 'done', result };
      return;
    }
    clearTimeout(deadline);
    let final: unknown;
    let dropped: unknown;
    try {
      for await (const event of readEvents(response.body!, what, options)) {
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
      yield { type: 'done', result: toResult(method, target, response.status, final) };
      return;
    }
    if (resumed || conversationId === undefined || lastId === undefined) {
      throw dropped === undefined
        ? new AgoraError('PEER_FAILURE', `${method} ${target}: the stream ended before its reply`)
        : wrap(dropped, `${method} ${target}`);
    }
    // The stream ended (or broke) before its reply: resume once where it stopped.
    resumed = true;
    method = 'GET';
    target = `${base}/conversations/${encodeURIComponent(conversationId)}/events`;
    headers = { ...options.headers, accept: 'text/event-stream', 'last-event-id': lastId };
    body = undefined;
  }
}

function wrap(error: unknown, what: string): AgoraError {
  if (error instanceof AgoraError) return error;
  return new AgoraError('PEER_FAILURE', `${what}: ${networkFailure(error)}`, { cause: error });
}
