// The one response type every mount answers with: a whole body, an event stream, or a WebSocket upgrade accepted.
import type { WebSocket } from 'ws';
import type { EdgeRequest } from './request.js';

/** A stream of Server-Sent Events: each frame already in the SSE wire format, pulled as the reader reads. */
export type EventStream = {
  frames: AsyncIterator<string>;
  /** Stops the stream when its reader goes away (a turn aborted, a watcher stopped). */
  cancel(): void;
};

/** What an accepted WebSocket is handed: the socket, and its messages counted by the edge's rate limit. */
export type SocketSession = {
  client: WebSocket;
  request: EdgeRequest;
  /** Calls `listener` for each message the rate limit lets through, in order; refused ones are answered by the edge. */
  onMessage(listener: (data: Buffer, isBinary: boolean) => void): void;
  /** Whether a token sent inside the socket (an auth frame: browsers cannot set headers on an upgrade) is one of the edge's; true when it needs none. */
  acceptsToken(token: string | undefined): boolean;
};

/**
 * A response: `status`, `headers` (with `content-type` and, for a whole body, `content-length`) and a whole `body`;
 * or, with `events`, a stream written as it comes; or, with `upgrade`, a WebSocket the edge opens and hands over.
 */
export type EdgeResponse = {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
  events?: EventStream;
  upgrade?: {
    accept(session: SocketSession): void;
    /** Counted against the per-resource socket cap (a room id). */ resource?: string;
  };
};

/** The content type of every JSON answer. */
export const JSON_TYPE = 'application/json; charset=utf-8';

/** The content type of every event stream. */
export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  // nginx would otherwise buffer the whole stream.
  'x-accel-buffering': 'no',
};

/** A response with its length computed; `headOnly` keeps the headers and drops the body (HEAD). */
export function respond(status: number, contentType: string, body: string, headOnly = false): EdgeResponse {
  return {
    status,
    headers: { 'content-type': contentType, 'content-length': String(Buffer.byteLength(body)) },
    body: headOnly ? '' : body,
  };
}

/** A JSON response whose text is already serialized; `byteLength` when the caller knows it. */
export function jsonText(
  status: number,
  text: string,
  headers: Record<string, string> = {},
  byteLength = Buffer.byteLength(text),
): EdgeResponse {
  return {
    status,
    headers: { 'content-type': JSON_TYPE, 'content-length': String(byteLength), ...headers },
    body: text,
  };
}

/** A JSON response from a value. */
export function json(status: number, value: unknown, headers: Record<string, string> = {}): EdgeResponse {
  return jsonText(status, JSON.stringify(value), headers);
}

/** An Agora failure (spec §2), the shape of every mount that has no other: `{"status":"failure","error":message}`. */
export function failure(status: number, message: string): EdgeResponse {
  return respond(status, JSON_TYPE, JSON.stringify({ status: 'failure', error: message }));
}

/** An event stream response. */
export function eventStream(events: EventStream, headers: Record<string, string> = {}): EdgeResponse {
  return { status: 200, headers: { ...SSE_HEADERS, ...headers }, body: '', events };
}

/** Whether a response is a stream. */
export function isStream(response: EdgeResponse): response is EdgeResponse & { events: EventStream } {
  return response.events !== undefined;
}
