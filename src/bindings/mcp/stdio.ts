// `agora mcp <agent-url>`: any Agora agent, local or remote, as an MCP server on stdin/stdout, for hosts that start
// MCP servers as processes (Claude Desktop, Claude Code, IDEs). An agent that serves `/mcp` is bridged: the host gets
// exactly the tools, schemas, resources and answers of its MCP face, in one MCP session of the agent's (so a
// multiround protocol's calls are the turns of one conversation there). An agent without the face is served from its
// Agora wire with the generic tools (a protocol's body as `body`), the process being one session.
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import { isAgoraError } from '../../errors.js';
import { McpBridge } from './bridge.js';
import { remoteReceiver, type RemoteOptions } from './remote.js';
import { callTool, listResources, listTools, readResource, type McpServerSource } from './server.js';
import { FaceSessions, sessionKey } from '../../faces/sessions.js';
import { McpToolTable } from './tools.js';
import { Catalogue } from '../../faces/catalogue.js';

/** Options of {@link serveMcpStdio}: how the agent is reached, and the streams (default the process's). */
export type McpStdioOptions = RemoteOptions & {
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream;
  /**
   * How often the agent's tools are read to notice a protocol added or removed, ms (default 30 000; 0: never). A change
   * is sent to the host as `notifications/tools/list_changed` and `notifications/resources/list_changed`; a bridged
   * agent's own notifications are passed on as they come.
   */
  pollMs?: number;
  /** Tools passed on from a bridged agent's listing at most (default 1 000). */
  maxTools?: number;
  /** Where a warning goes; default stderr. */
  warn?: (line: string) => void;
};

/** What the host is answered from: the agent's MCP face, or its Agora wire when it has no MCP face. */
type Face =
  | { kind: 'mcp'; bridge: McpBridge }
  | { kind: 'agora'; source: McpServerSource & { sessions: FaceSessions }; session: string };

/** The agent behind the stdio server: which face answers is found on first need, and again when the face goes. */
class StdioAgent {
  readonly #base: string;
  readonly #options: McpStdioOptions;
  readonly #changed: (list: 'tools' | 'resources' | 'both') => void;
  #face: Promise<Face> | undefined;

  constructor(url: string, options: McpStdioOptions, changed: (list: 'tools' | 'resources' | 'both') => void) {
    this.#base = url.replace(/\/+$/, '');
    this.#options = options;
    this.#changed = changed;
  }

  /** The face answering; a failure to tell (the agent unreachable, a refused token) is thrown and tried again next time. */
  face(): Promise<Face> {
    this.#face ??= this.#choose().catch((error: unknown) => {
      this.#face = undefined;
      throw error;
    });
    return this.#face;
  }

  async #choose(): Promise<Face> {
    const { token, tokenSource, timeoutMs, maxReplyBytes, maxTools, warn, fetch } = this.#options;
    const bridge = await McpBridge.open(`${this.#base}/mcp`, {
      token,
      ...(tokenSource ? { tokenSource } : {}),
      timeoutMs,
      maxReplyBytes,
      maxTools,
      warn,
      fetch,
      onListChanged: (list) => this.#changed(list),
    });
    if (bridge !== undefined) return { kind: 'mcp', bridge };
    const receiver = remoteReceiver(this.#base, this.#options);
    // Whether a remote agent has an LLM cannot be seen: `ask` is offered, and the agent's refusal is a tool error.
    const tools = new McpToolTable(receiver, new Catalogue(receiver), { naturalLanguage: true });
    // The process is the session: it lives until the host closes the connection.
    const sessions = new FaceSessions('mcp', undefined, { idleMs: 365 * 24 * 3_600_000 });
    const session = sessionKey(undefined, randomUUID());
    await sessions.open(session);
    return { kind: 'agora', source: { receiver, tools, sessions, name: 'agora-agent', version: '1.0.0' }, session };
  }

  // Answers on the face; when a bridged agent has lost its MCP face (restarted without it), the face is chosen again
  // on the next request and the host is told its lists changed.
  async #on<T>(
    bridged: (bridge: McpBridge) => Promise<T>,
    wire: (source: McpServerSource, session: string) => Promise<T>,
  ): Promise<T> {
    const face = await this.face();
    if (face.kind === 'agora') return wire(face.source, face.session);
    try {
      return await bridged(face.bridge);
    } catch (error) {
      if (isAgoraError(error) && error.code === 'NOT_FOUND' && this.#face !== undefined) {
        this.#face = undefined;
        void face.bridge.close();
        this.#changed('both');
      }
      throw error;
    }
  }

  listTools(cursor: string | undefined, signal: AbortSignal) {
    return asMcp(
      this.#on(
        (bridge) => bridge.listTools(cursor, signal),
        (source) => listTools(source),
      ),
    );
  }

  async callTool(
    name: string,
    args: Record<string, unknown> | undefined,
    signal: AbortSignal,
  ): Promise<CallToolResult> {
    try {
      return await this.#on(
        (bridge) => bridge.callTool(name, args, signal),
        (source, session) => callTool(source, name, args, session, { signal }),
      );
    } catch (error) {
      // A failure to reach the agent is the tool's failure, worded for the host's LLM to read (`CODE: message`).
      if (!isAgoraError(error)) throw error;
      return { content: [{ type: 'text', text: `${error.code}: ${error.message}` }], isError: true };
    }
  }

  listResources(cursor: string | undefined, signal: AbortSignal) {
    return asMcp(
      this.#on(
        (bridge) => bridge.listResources(cursor, signal),
        (source) => listResources(source),
      ),
    );
  }

  readResource(uri: string, signal: AbortSignal) {
    return asMcp(
      this.#on(
        (bridge) => bridge.readResource(uri, signal),
        (source) => readResource(source, uri),
      ),
    );
  }

  /** What the host's tool list stands on (the bridged tools, or the protocols listed), compared by the poll. */
  signature(): Promise<string> {
    return this.#on(
      async (bridge) => `mcp:${JSON.stringify((await bridge.listTools(undefined)).tools)}`,
      async (source) =>
        `agora:${Object.keys(await source.receiver.wellknown())
          .sort()
          .join(',')}`,
    );
  }

  /** Ends the agent's session (and so its conversations). */
  async close(): Promise<void> {
    const face = await this.#face?.catch(() => undefined);
    if (face?.kind === 'mcp') await face.bridge.close();
    if (face?.kind === 'agora')
      await face.source.sessions.close(face.session, face.source.receiver).catch(() => undefined);
  }
}

/** An AgoraError as a JSON-RPC error (`-32603`, `CODE: message`), for requests that have no tool result to carry it. */
async function asMcp<T>(answer: Promise<T>): Promise<T> {
  try {
    return await answer;
  } catch (error) {
    if (!isAgoraError(error)) throw error;
    throw new McpError(ErrorCode.InternalError, `${error.code}: ${error.message}`);
  }
}

/**
 * Serves the agent at `url` as an MCP server over stdio; resolves when the host closes the connection.
 * @example await serveMcpStdio('http://localhost:3000', { token: process.env.AGORA_TOKEN });
 */
export async function serveMcpStdio(url: string, options: McpStdioOptions = {}): Promise<void> {
  const server = new Server(
    { name: new URL(url).host || 'agora-agent', version: '1.0.0' },
    { capabilities: { tools: { listChanged: true }, resources: { listChanged: true } } },
  );
  let initialized = false;
  server.oninitialized = () => (initialized = true);
  const changed = (list: 'tools' | 'resources' | 'both') => {
    if (!initialized) return;
    if (list !== 'resources') void server.sendToolListChanged().catch(() => undefined);
    if (list !== 'tools') void server.sendResourceListChanged().catch(() => undefined);
  };
  const agent = new StdioAgent(url, options, (list) => {
    changed(list);
    // What the agent told is known now: the poll must not tell it a second time.
    watcher.resync();
  });
  server.setRequestHandler(ListToolsRequestSchema, (request, extra) =>
    agent.listTools(request.params?.cursor, extra.signal),
  );
  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    agent.callTool(request.params.name, request.params.arguments, extra.signal),
  );
  server.setRequestHandler(ListResourcesRequestSchema, (request, extra) =>
    agent.listResources(request.params?.cursor, extra.signal),
  );
  server.setRequestHandler(ReadResourceRequestSchema, (request, extra) =>
    agent.readResource(request.params.uri, extra.signal),
  );
  // The face is looked for at once, so the host's first listing does not wait for it.
  void agent.face().catch(() => undefined);
  const watcher = watchTools(
    () => agent.signature(),
    options.pollMs ?? 30_000,
    () => changed('both'),
  );
  const transport = new StdioServerTransport(
    (options.input ?? process.stdin) as ConstructorParameters<typeof StdioServerTransport>[0],
    (options.output ?? process.stdout) as ConstructorParameters<typeof StdioServerTransport>[1],
  );
  const closed = new Promise<void>((resolve) => (server.onclose = resolve));
  await server.connect(transport);
  (options.input ?? process.stdin).once('end', () => void server.close());
  await closed;
  watcher.stop();
  await agent.close();
}

/**
 * Reads what the tools stand on every `everyMs` and calls `changed` when it differs from the last read; an agent that
 * does not answer changes nothing.
 */
function watchTools(
  read: () => Promise<string>,
  everyMs: number,
  changed: () => void,
): { stop(): void; resync(): void } {
  let last: string | undefined;
  let busy = false;
  const check = async (tell: boolean) => {
    if (busy) return;
    busy = true;
    try {
      const listed = await read();
      if (tell && last !== undefined && listed !== last) changed();
      last = listed;
    } catch {
      // Unreachable for now: read again on the next tick.
    } finally {
      busy = false;
    }
  };
  if (everyMs <= 0) return { stop: () => {}, resync: () => {} };
  void check(false);
  const timer = setInterval(() => void check(true), everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer), resync: () => void check(false) };
}
