// `agora mcp <url>` as a bridge to the agent's own MCP face: one MCP session with `<url>/mcp` through the SDK's
// `Client` over Streamable HTTP, so a host on stdio gets exactly the tools, schemas and answers an HTTP host gets,
// and the remote session keeps the conversations of multiround tools. Every exchange is bounded (time, reply size,
// tools listed); a session the agent no longer knows (404) is opened again, as MCP's transport spec tells clients.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  ListResourcesResultSchema,
  ListToolsResultSchema,
  McpError,
  ReadResourceResultSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type ListResourcesResult,
  type ListToolsResult,
  type ReadResourceResult,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { AgoraError, isAgoraError } from '../../errors.js';
import { bearerFetch, type TokenSource } from '../../net/token-source.js';
import { boundedFetch } from '../../sender/transport.js';
import { seconds, shownUrl } from './_wording.js';
import { answeredError, failureOf, hasNoMcpFace, isClosed } from './bridge-failures.js';

export { failureOf } from './bridge-failures.js';

/** Options of {@link McpBridge.open}. */
export type McpBridgeOptions = {
  /** Bearer token the agent asks for. */
  token?: string;
  /** Where a renewed token comes from (client credentials), sent to the agent's origin only; wins over `token`. */
  tokenSource?: TokenSource;
  /** Longest exchange with the agent, ms (default 60 000). */
  timeoutMs?: number;
  /** Largest reply read, bytes (default 4 MiB); on the notification stream, the largest event. */
  maxReplyBytes?: number;
  /** Tools passed on from one listing at most (default 1 000); the rest are dropped, with a warning. */
  maxTools?: number;
  /** Called when the agent sends `notifications/tools/list_changed` or `notifications/resources/list_changed`. */
  onListChanged?: (list: 'tools' | 'resources') => void;
  /** Where a warning goes (a listing cut short); default stderr, which hosts keep as the server's log. */
  warn?: (line: string) => void;
  fetch?: typeof fetch;
};

// How long ending the session may hold up a closing host, ms.
const CLOSE_WAIT_MS = 5000;

/** One MCP session with an agent's `/mcp`, opened again when the agent has forgotten it. */
export class McpBridge {
  readonly endpoint: string;
  readonly #options: McpBridgeOptions;
  readonly #timeoutMs: number;
  #client: Promise<Client> | undefined;
  #closed = false;
  #warned = false;

  private constructor(endpoint: string, options: McpBridgeOptions) {
    this.endpoint = endpoint;
    this.#options = options;
    this.#timeoutMs = options.timeoutMs ?? 60_000;
  }

  /**
   * Opens a session with the MCP face at `endpoint` (an MCP `initialize`). Resolves undefined when there is none there
   * (404, 405, a reply that is not MCP); a failure that says nothing of that (unreachable, a refused token, 5xx, no
   * answer in time) is thrown as an AgoraError that words it.
   * @example const bridge = await McpBridge.open('http://localhost:3000/mcp', { token });
   */
  static async open(endpoint: string, options: McpBridgeOptions = {}): Promise<McpBridge | undefined> {
    const bridge = new McpBridge(endpoint, options);
    try {
      await bridge.#connected();
    } catch (error) {
      if (isAgoraError(error) && error.code === 'NOT_FOUND') return undefined;
      throw error;
    }
    return bridge;
  }

  /** The agent's tools, as its face lists them (the first `maxTools`). */
  async listTools(cursor: string | undefined, signal?: AbortSignal): Promise<ListToolsResult> {
    const result = await this.#request(
      { method: 'tools/list', params: cursor === undefined ? {} : { cursor } },
      ListToolsResultSchema,
      signal,
    );
    const maxTools = this.#options.maxTools ?? 1000;
    if (result.tools.length <= maxTools) return result;
    // Once: the poll lists the tools again every few seconds.
    if (!this.#warned)
      this.#warn(
        `agora mcp: ${shownUrl(this.endpoint)} listed ${result.tools.length} tools; the first ${maxTools} are passed on`,
      );
    this.#warned = true;
    return { ...result, tools: result.tools.slice(0, maxTools) };
  }

  /** A tool call, answered by the agent in this session. */
  callTool(name: string, args: Record<string, unknown> | undefined, signal?: AbortSignal): Promise<CallToolResult> {
    return this.#request(
      { method: 'tools/call', params: { name, ...(args !== undefined ? { arguments: args } : {}) } },
      CallToolResultSchema,
      signal,
    ) as Promise<CallToolResult>;
  }

  /** The agent's resources. */
  listResources(cursor: string | undefined, signal?: AbortSignal): Promise<ListResourcesResult> {
    return this.#request(
      { method: 'resources/list', params: cursor === undefined ? {} : { cursor } },
      ListResourcesResultSchema,
      signal,
    );
  }

  /** One resource of the agent's. */
  readResource(uri: string, signal?: AbortSignal): Promise<ReadResourceResult> {
    return this.#request({ method: 'resources/read', params: { uri } }, ReadResourceResultSchema, signal);
  }

  /** Ends the session (`DELETE`, so the agent ends its conversations) and stops listening. */
  async close(): Promise<void> {
    this.#closed = true;
    const pending = this.#client;
    this.#client = undefined;
    const client = await pending?.catch(() => undefined);
    if (client === undefined) return;
    // A host that closes waits a few seconds at most; closing the client then aborts a DELETE still under way.
    const transport = client.transport as StreamableHTTPClientTransport | undefined;
    await Promise.race([
      transport?.terminateSession().catch(() => undefined),
      new Promise((resolve) => setTimeout(resolve, Math.min(this.#timeoutMs, CLOSE_WAIT_MS)).unref()),
    ]);
    await client.close().catch(() => undefined);
  }

  // A request in the session; a session the agent answers 404 is opened again and the request sent once more (the
  // agent did not take it: MCP's transport spec has clients start a new session on 404).
  async #request<Schema extends z.ZodType>(
    request: { method: string; params: Record<string, unknown> },
    schema: Schema,
    signal: AbortSignal | undefined,
  ): Promise<z.output<Schema>> {
    for (let attempt = 0; ; attempt++) {
      const pending = this.#connected();
      const client = await pending;
      const deadline = AbortSignal.timeout(this.#timeoutMs);
      try {
        // The SDK's own timer stays behind ours: a timeout is ours, so it is worded as one.
        return await client.request(request, schema, {
          signal: signal ? AbortSignal.any([signal, deadline]) : deadline,
          timeout: this.#timeoutMs + 1000,
        });
      } catch (error) {
        if (attempt === 0 && error instanceof StreamableHTTPError && error.code === 404) {
          this.#drop(pending);
          continue;
        }
        if (error instanceof McpError && !deadline.aborted && !isClosed(error)) throw answeredError(error);
        throw failureOf(this.endpoint, error, { timedOut: deadline.aborted, timeoutMs: this.#timeoutMs });
      }
    }
  }

  #connected(): Promise<Client> {
    if (this.#closed)
      return Promise.reject(
        new AgoraError('PEER_FAILURE', `agent at ${shownUrl(this.endpoint)}: the bridge is closing`),
      );
    this.#client ??= this.#connect().catch((error: unknown) => {
      this.#client = undefined;
      throw error;
    });
    return this.#client;
  }

  #drop(pending: Promise<Client>): void {
    if (this.#client !== pending) return;
    this.#client = undefined;
    void pending.then((client) => client.close()).catch(() => undefined);
  }

  // The connector: with a token source, each request to the agent's origin carries a token valid then.
  #fetch(): typeof fetch {
    const { tokenSource } = this.#options;
    const connector = this.#options.fetch ?? fetch;
    return tokenSource ? bearerFetch(connector, tokenSource, this.endpoint) : connector;
  }

  async #connect(): Promise<Client> {
    const headers: Record<string, string> =
      this.#options.token && !this.#options.tokenSource ? { authorization: `Bearer ${this.#options.token}` } : {};
    const transport = new StreamableHTTPClientTransport(new URL(this.endpoint), {
      requestInit: { headers },
      fetch: bridgeFetch(this.#fetch(), this.#timeoutMs, this.#options.maxReplyBytes ?? 4 * 1024 * 1024),
    });
    const client = new Client({ name: 'agora-mcp-bridge', version: '1.0.0' });
    // The notification stream's hiccups (a reconnection, an agent restarting) are not the host's business.
    client.onerror = () => undefined;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.#options.onListChanged?.('tools'));
    client.setNotificationHandler(ResourceListChangedNotificationSchema, () =>
      this.#options.onListChanged?.('resources'),
    );
    const deadline = AbortSignal.timeout(this.#timeoutMs);
    try {
      await client.connect(transport, { signal: deadline, timeout: this.#timeoutMs + 1000 });
    } catch (error) {
      await client.close().catch(() => undefined);
      if (hasNoMcpFace(error)) {
        const agent = `agent at ${shownUrl(this.endpoint)}`;
        throw new AgoraError(
          'NOT_FOUND',
          `${agent} serves no MCP face (${failureOf(this.endpoint, error).message.slice(agent.length + 1)})`,
        );
      }
      throw failureOf(this.endpoint, error, { timedOut: deadline.aborted, timeoutMs: this.#timeoutMs });
    }
    return client;
  }

  #warn(line: string): void {
    (this.#options.warn ?? ((text: string) => process.stderr.write(`${text}\n`)))(line);
  }
}

/**
 * The bridge's `fetch`: POSTs and DELETEs bounded as every exchange with a peer is (time, reply size); the GET that
 * carries the agent's notifications may stay open as long as it likes, but must answer in time and each event in it
 * stays under the size cap.
 */
function bridgeFetch(fetchImpl: typeof fetch, timeoutMs: number, maxBytes: number): typeof fetch {
  const bounded = boundedFetch({ fetch: fetchImpl, timeoutMs, maxReplyBytes: maxBytes });
  return async (input, init = {}) => {
    if ((init.method ?? 'GET').toUpperCase() !== 'GET') return bounded(input, init);
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new AgoraError('TIMEOUT', `GET ${String(input)}: no answer within ${seconds(timeoutMs)}`)),
      timeoutMs,
    );
    let response: Response;
    try {
      response = await fetchImpl(input, {
        ...init,
        signal: init.signal ? AbortSignal.any([init.signal, controller.signal]) : controller.signal,
      });
    } finally {
      clearTimeout(timer);
    }
    if (!response.ok || response.body === null) return response;
    return new Response(response.body.pipeThrough(eventSizeCap(maxBytes)), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/** A stream of server-sent events refused at the first event over `maxBytes` (events end at a blank line). */
function eventSizeCap(maxBytes: number): TransformStream<Uint8Array, Uint8Array> {
  let size = 0;
  let previous = 0;
  return new TransformStream({
    transform(chunk, controller) {
      for (const byte of chunk) {
        if (byte === 0x0a && previous === 0x0a) size = 0;
        else size += 1;
        // `\r\n\r\n` ends an event too: a carriage return does not break a run of line feeds.
        if (byte !== 0x0d) previous = byte;
        if (size > maxBytes) {
          controller.error(new AgoraError('PEER_FAILURE', `notification stream: an event over ${maxBytes} bytes`));
          return;
        }
      }
      controller.enqueue(chunk);
    },
  });
}
