// The face's side of Streamable HTTP: one SDK `Server` for the face, connected once to a transport of ours that hands
// it each POSTed JSON-RPC message and returns its answers as the POST's JSON body. The SDK's own HTTP transports
// make a server per request in stateless mode, which cost ~1 ms of CPU per call here (web Request/Response objects,
// a schema validator per server, an abort per close); sessions are the face's (in the agent's memory), so the
// server itself holds no per-client state and one serves every request.
import type { Transport, TransportSendOptions } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  JSONRPCMessageSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import { createMcpServer, type McpServerSource } from './server.js';

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

/** Answers the face's POSTs: checks the request as Streamable HTTP asks, then hands its messages to the one server. */
export async function createAnswerer(
  source: McpServerSource,
): Promise<(message: unknown, headers: Record<string, string>, signal: AbortSignal | undefined) => Promise<McpAnswer>> {
  const transport = new EdgeTransport();
  const server = createMcpServer(source, (headers) => {
    const value = headers?.['mcp-session-id'];
    return typeof value === 'string' ? value : undefined;
  });
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
