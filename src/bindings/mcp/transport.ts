// The face's side of Streamable HTTP: one SDK `Server` for the face, connected once to a transport of ours that hands
// it each POSTed JSON-RPC message and returns its answers as the POST's JSON body. The SDK's own HTTP transports
// make a server per request in stateless mode, which cost ~1 ms of CPU per call here (web Request/Response objects,
// a schema validator per server, an abort per close); sessions are the face's (in the agent's memory), so the
// server itself holds no per-client state and one serves every request.
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ErrorCode,
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { callTool, createMcpServer, type McpServerSource } from './server.js';

/** The answer to one POST: a status and, unless 202, a JSON body. */
export type McpAnswer = { status: number; body?: unknown };

type Pending = { id: RequestId; resolve: (message: JSONRPCMessage) => void };

const MAX_BATCH = 100;

// One transport for every request: each request's id is replaced by an id of ours while the server answers it, so
// two clients' `id: 1` never meet.
class EdgeTransport implements Transport {
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  readonly #pending = new Map<number, Pending>();
  #next = 0;

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.onclose?.();
  }

  async send(message: JSONRPCMessage, _options?: TransportSendOptions): Promise<void> {
    // Only answers are sent back; server-initiated messages need the client's stream (list_changed goes on the GET).
    if (!('id' in message) || !('result' in message || 'error' in message)) return;
    const pending = typeof message.id === 'number' ? this.#pending.get(message.id) : undefined;
    if (pending === undefined) return;
    this.#pending.delete(message.id as number);
    pending.resolve({ ...message, id: pending.id } as JSONRPCMessage);
  }

  exchange(
    message: JSONRPCMessage,
    headers: Record<string, string>,
    signal: AbortSignal | undefined,
  ): Promise<JSONRPCMessage> | undefined {
    const extra = { requestInfo: { headers } };
    if (!('method' in message) || !('id' in message)) {
      this.onmessage?.(message, extra);
      return undefined;
    }
    const internal = ++this.#next;
    return new Promise((resolve) => {
      this.#pending.set(internal, { id: message.id, resolve });
      signal?.addEventListener(
        'abort',
        () => {
          if (!this.#pending.delete(internal)) return;
          // The server aborts the handler's signal, as for a client's own cancellation.
          this.onmessage?.(
            {
              jsonrpc: '2.0',
              method: 'notifications/cancelled',
              params: { requestId: internal, reason: 'client went away' },
            },
            extra,
          );
          resolve({
            jsonrpc: '2.0',
            id: message.id,
            error: { code: -32800, message: 'Request cancelled' },
          } as JSONRPCMessage);
        },
        { once: true },
      );
      this.onmessage?.({ ...message, id: internal } as JSONRPCMessage, extra);
    });
  }
}

function error(status: number, code: number, message: string): McpAnswer {
  return { status, body: { jsonrpc: '2.0', error: { code, message }, id: null } };
}

type PlainToolCall = {
  jsonrpc: '2.0';
  id: string | number;
  method: 'tools/call';
  params: { name: string; arguments?: Record<string, unknown> };
};

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Whether a message is a `tools/call` as hosts send it: an id, a tool name and arguments, nothing else (no `_meta`:
 * no progress token; no `task`). The SDK's schemas would take exactly such a message, and its server would do nothing
 * with it but call the tool: it is answered here without them (a third of a call's CPU). Anything else goes through
 * the SDK.
 */
function isPlainToolCall(message: unknown): message is PlainToolCall {
  if (!isPlainObject(message) || message.jsonrpc !== '2.0' || message.method !== 'tools/call') return false;
  const { id, params } = message;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return false;
  if (!isPlainObject(params) || typeof params.name !== 'string') return false;
  for (const key in params) if (key !== 'name' && key !== 'arguments') return false;
  for (const key in message)
    if (key !== 'jsonrpc' && key !== 'id' && key !== 'method' && key !== 'params') return false;
  return params.arguments === undefined || isPlainObject(params.arguments);
}

/** A tool call's answer as the SDK's server writes it: the result, or the thrown error's code and message. */
async function answerToolCall(
  source: McpServerSource,
  call: PlainToolCall,
  session: string | undefined,
  signal: AbortSignal | undefined,
): Promise<McpAnswer> {
  try {
    const result = await callTool(source, call.params.name, call.params.arguments, session, signal ? { signal } : {});
    return { status: 200, body: { result, jsonrpc: '2.0', id: call.id } };
  } catch (thrown) {
    const { code, message, data } = (thrown ?? {}) as { code?: unknown; message?: unknown; data?: unknown };
    const failure: Record<string, unknown> = {
      code: Number.isSafeInteger(code) ? code : ErrorCode.InternalError,
      message: typeof message === 'string' && message !== '' ? message : 'Internal error',
    };
    if (data !== undefined) failure.data = data;
    return { status: 200, body: { jsonrpc: '2.0', id: call.id, error: failure } };
  }
}

/** Answers the face's POSTs: checks the request as Streamable HTTP asks, then hands its messages to the one server. */
export async function createAnswerer(
  source: McpServerSource,
): Promise<(message: unknown, headers: Record<string, string>, signal: AbortSignal | undefined) => Promise<McpAnswer>> {
  const transport = new EdgeTransport();
  const sessionOf = (headers: Record<string, unknown> | undefined) => {
    const value = headers?.['mcp-session-id'];
    return typeof value === 'string' ? value : undefined;
  };
  const server = createMcpServer(source, sessionOf);
  await server.connect(transport);
  return async (raw, headers, signal) => {
    const accept = headers.accept ?? '';
    if (!accept.includes('application/json') || !accept.includes('text/event-stream'))
      return error(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');
    if (!/^application\/json\s*(?:;|$)/i.test(headers['content-type'] ?? ''))
      return error(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
    const version = headers['mcp-protocol-version'];
    if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version))
      return error(
        400,
        -32000,
        `Bad Request: Unsupported protocol version: ${version.slice(0, 40)} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
      );
    if (isPlainToolCall(raw)) return answerToolCall(source, raw, sessionOf(headers), signal);
    const batch = Array.isArray(raw);
    const items: unknown[] = batch ? raw : [raw];
    if (items.length === 0 || items.length > MAX_BATCH)
      return error(400, -32600, `Invalid Request: a batch holds 1 to ${MAX_BATCH} messages`);
    const messages: JSONRPCMessage[] = [];
    for (const item of items) {
      const parsed = JSONRPCMessageSchema.safeParse(item);
      if (!parsed.success) return error(400, -32700, 'Parse error: Invalid JSON-RPC message');
      messages.push(parsed.data);
    }
    const answers = (await Promise.all(messages.map((message) => transport.exchange(message, headers, signal)))).filter(
      (answer) => answer !== undefined,
    );
    if (answers.length === 0) return { status: 202 };
    return { status: 200, body: batch ? answers : answers[0] };
  };
}
