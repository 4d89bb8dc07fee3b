// The MCP face: the agent as an MCP server over Streamable HTTP at `/mcp`, through `@modelcontextprotocol/sdk`'s server
// (loaded on the first request, never by the package root). One SDK server answers every POST through the face's
// transport (transport.ts); the face keeps the sessions (`Mcp-Session-Id`) itself, as every face does (sessions.ts): in
// the agent's memory when it is shared, so with Redis any process answers any session, and each bound to the token that
// opened it. A GET opens the session's stream of list_changed notifications (one per session, a few per client). Every
// failure, the edge's 401, 403, 413 and 429 included, is a JSON-RPC error as the SDK's HTTP transport writes them, its
// HTTP status kept.
import { randomUUID } from 'node:crypto';
import type { MountRoute } from '../../edge/mount.js';
import { header, type EdgeRequest } from '../../edge/request.js';
import { eventStream, json, type EdgeResponse } from '../../edge/response.js';
import { FeedChannel, sseFrame, wantsEventStream } from '../../edge/events.js';
import { clientKey } from '../../edge/guard.js';
import { isBadBody, isTooLarge, readBodyText } from '../../faces/body.js';
import type { Face, FaceDefinition } from '../../faces/face.js';
import { callerOf, FaceSessions, sessionKey } from '../../faces/sessions.js';
import { McpToolTable } from './tools.js';

/** Options of the MCP face. */
export type McpOptions = {
  /** Agent version in MCP's `initialize` answer (default `1.0.0`). */
  version?: string;
  /** How long an MCP session with no live conversation lives after its last use, ms (default 30 minutes). */
  mcpSessionIdleMs?: number;
  /** Open MCP sessions at most (default 10 000): an `initialize` past it is answered 503 with Retry-After. */
  mcpMaxSessions?: number;
  /** Open `GET /mcp` event streams at most (default 256). */
  mcpMaxStreams?: number;
  /** Open `GET /mcp` event streams of one client address at most (default 8); a session has one at most. */
  mcpMaxStreamsPerClient?: number;
};

/** The MCP endpoint's path. */
export const MCP_PATH = '/mcp';

const ALLOW = 'GET, POST, DELETE, OPTIONS';

/** MCP's route: `/mcp`, which needs the token when tokens are set. */
export const MCP_ROUTES: readonly MountRoute[] = [{ path: MCP_PATH, name: 'mcp', allow: ALLOW }];

// JSON-RPC codes as the SDK's transport answers transport-level refusals: -32000 for a refused request, -32001 for
// an unknown session, -32700 for a body that is not JSON, -32603 for the server's own failure.
function codeOf(status: number): number {
  return status >= 500 ? -32603 : -32000;
}

/** A failure as MCP's JSON-RPC error `{jsonrpc: '2.0', error: {code, message}, id: null}`, its HTTP status kept. */
export function mcpFailure(status: number, message: string, code = codeOf(status)): EdgeResponse {
  return json(status, { jsonrpc: '2.0', error: { code, message }, id: null });
}

const LIST_CHANGED = [
  sseFrame('message', JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })),
  sseFrame('message', JSON.stringify({ jsonrpc: '2.0', method: 'notifications/resources/list_changed' })),
];

// Only the headers the answerer reads.
const PASSED_HEADERS = ['accept', 'content-type', 'mcp-session-id', 'mcp-protocol-version'] as const;

function headersOf(request: EdgeRequest): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of PASSED_HEADERS) {
    const value = header(request, name);
    if (value !== undefined) headers[name] = value;
  }
  return headers;
}

/** A refusal for a full table (sessions, streams): 503 with Retry-After. */
function busy(message: string): EdgeResponse {
  const refused = mcpFailure(503, message, -32000);
  refused.headers['retry-after'] = '60';
  return refused;
}

function isInitialize(message: unknown): boolean {
  const messages = Array.isArray(message) ? message : [message];
  return messages.some(
    (item) => typeof item === 'object' && item !== null && (item as { method?: unknown }).method === 'initialize',
  );
}

/** The MCP face. */
export const mcpFace: FaceDefinition<McpOptions, 'mcp'> = {
  name: 'mcp',
  create(context, options): Face {
    const tools = new McpToolTable(context.receiver, context.catalogue);
    const sessions = new FaceSessions('mcp', context.memory, {
      now: context.now,
      idleMs: options.mcpSessionIdleMs ?? 30 * 60_000,
      ...(options.mcpMaxSessions !== undefined ? { maxSessions: options.mcpMaxSessions } : {}),
    });
    const maxStreams = options.mcpMaxStreams ?? 256;
    const maxStreamsPerClient = options.mcpMaxStreamsPerClient ?? 8;
    const source = {
      receiver: context.receiver,
      tools,
      sessions,
      name: context.name,
      version: options.version ?? '1.0.0',
    };
    const feeds = new Set<FeedChannel>();
    // The open GET streams by session key and by client address.
    const streamOfSession = new Map<string, FeedChannel>();
    const streamsOfClient = new Map<string, number>();
    /** A request's session key: its `Mcp-Session-Id` under the caller's token, so a session answers only the token that opened it. */
    const keyOf = (request: EdgeRequest, id: string) => sessionKey(callerOf(request, context.tokensRequired), id);
    let answerer: ReturnType<(typeof import('./transport.js'))['createAnswerer']> | undefined;

    const stopWatching = context.receiver.capabilities.description?.onProtocolsChanged(() => {
      tools.invalidate();
      for (const feed of feeds) for (const frame of LIST_CHANGED) feed.send(frame);
    });

    async function post(request: EdgeRequest): Promise<EdgeResponse> {
      let message: unknown;
      try {
        message = JSON.parse(await readBodyText(request, context.maxBodyBytes));
      } catch (error) {
        if (isTooLarge(error)) return mcpFailure(413, 'Request body too large');
        // Refused by the edge before any parse (nested too deeply): the SDK's transport answers a body it cannot take
        // as a message so.
        if (isBadBody(error)) return mcpFailure(400, `Parse error: ${error.message}`, -32700);
        if (!(error instanceof SyntaxError)) throw error;
        return mcpFailure(400, 'Parse error: Invalid JSON', -32700);
      }
      const initializing = isInitialize(message);
      if (initializing && !(await sessions.hasRoom())) return busy('Too many open MCP sessions: retry later');
      const session = header(request, 'mcp-session-id');
      const key = session === undefined ? undefined : keyOf(request, session);
      if (!initializing && key !== undefined && !(await sessions.has(key)))
        return mcpFailure(404, 'Session not found', -32001);
      const answer = await (answerer ??= import('./transport.js').then(({ createAnswerer }) => createAnswerer(source)));
      const headers = headersOf(request);
      // The server reads the session as its key (the id under the caller's token), the conversations' owner.
      if (key !== undefined) headers['mcp-session-id'] = key;
      const answered = await answer(message, headers, request.signal);
      const response: EdgeResponse =
        answered.body === undefined
          ? { status: answered.status, headers: { 'content-length': '0' }, body: '' }
          : json(answered.status, answered.body);
      if (initializing && response.status === 200) {
        const id = randomUUID();
        await sessions.open(keyOf(request, id));
        response.headers['mcp-session-id'] = id;
      }
      return response;
    }

    async function listen(request: EdgeRequest): Promise<EdgeResponse> {
      if (!wantsEventStream(request.headers.accept))
        return mcpFailure(406, 'Not Acceptable: GET takes Accept: text/event-stream');
      const session = header(request, 'mcp-session-id');
      if (session === undefined) return mcpFailure(400, 'Bad Request: Mcp-Session-Id header is required');
      const key = keyOf(request, session);
      if (!(await sessions.has(key))) return mcpFailure(404, 'Session not found', -32001);
      // MCP needs one stream per session (as the SDK's transport, a second one is a conflict); a client's are few.
      if (streamOfSession.has(key)) return mcpFailure(409, 'Conflict: Only one SSE stream is allowed per session');
      const client = clientKey(request.remoteAddress);
      if (feeds.size >= maxStreams || (streamsOfClient.get(client) ?? 0) >= maxStreamsPerClient)
        return busy('Too many open MCP event streams: retry later');
      const feed: FeedChannel = new FeedChannel(undefined, () => {
        feeds.delete(feed);
        if (streamOfSession.get(key) === feed) streamOfSession.delete(key);
        const left = (streamsOfClient.get(client) ?? 1) - 1;
        if (left > 0) streamsOfClient.set(client, left);
        else streamsOfClient.delete(client);
      });
      feeds.add(feed);
      streamOfSession.set(key, feed);
      streamsOfClient.set(client, (streamsOfClient.get(client) ?? 0) + 1);
      return eventStream(feed, { 'mcp-session-id': session });
    }

    async function end(request: EdgeRequest): Promise<EdgeResponse> {
      const session = header(request, 'mcp-session-id');
      if (session === undefined) return mcpFailure(400, 'Bad Request: Mcp-Session-Id header is required');
      const key = keyOf(request, session);
      if (!(await sessions.close(key, context.receiver))) return mcpFailure(404, 'Session not found', -32001);
      streamOfSession.get(key)?.cancel();
      return { status: 200, headers: { 'content-length': '0' }, body: '' };
    }

    return {
      name: 'mcp',
      routes: MCP_ROUTES,
      headers: ['mcp-session-id', 'mcp-protocol-version'],
      handle(request) {
        if (request.method === 'POST') return post(request);
        if (request.method === 'GET') return listen(request);
        if (request.method === 'DELETE') return end(request);
        const refusal = mcpFailure(
          405,
          'Method not allowed: POST JSON-RPC messages, GET the notification stream, DELETE the session',
        );
        refusal.headers.allow = 'GET, POST, DELETE';
        return refusal;
      },
      failure: mcpFailure,
      close() {
        stopWatching?.();
        for (const feed of [...feeds]) feed.cancel();
      },
    };
  },
};
