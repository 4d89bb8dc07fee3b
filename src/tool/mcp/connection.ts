// One MCP server an agent uses, through the SDK's `Client`: started (or connected) when first needed, started again
// after it died (on a later call, waiting longer at each death in a row), every call bounded in time and in the size
// of its result (an HTTP server's bytes counted while they are read, before anything parses them). This module loads
// the SDK client; the agent loads it only when `mcp.json` names a server. A server is a peer like any other.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AgoraError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { boundedFetch } from '../../net/bounded-fetch.js';
import { isStdio, MCP_DEFAULTS, type McpServerConfig } from './config.js';

/** A tool a server lists: its name, description and input JSON Schema. */
export type ListedTool = { name: string; description?: string | undefined; inputSchema: Record<string, unknown> };

/** How a server is doing, for the banner and the dashboard. */
export type McpServerStatus = {
  name: string;
  state: 'idle' | 'running' | 'failed';
  tools: number;
  restarts: number;
  error?: string;
};

// Starting a server (a process that may be `npx` fetching a package) is bounded apart from its calls.
const START_TIMEOUT_MS = 60_000;

/** A connection to one MCP server of `mcp.json`. */
export class McpConnection {
  readonly name: string;
  readonly #config: McpServerConfig;
  readonly #logger: Logger;
  readonly #dir: string;
  #client: Promise<Client> | undefined;
  #status: McpServerStatus;
  #closed = false;
  #started = false;
  /** Deaths in a row (reset by a call that is answered), and when the server may be started again. */
  #deaths = 0;
  #restartAt = 0;

  constructor(name: string, config: McpServerConfig, options: { dir: string; logger: Logger }) {
    this.name = name;
    this.#config = config;
    this.#dir = options.dir;
    this.#logger = options.logger;
    this.#status = { name, state: 'idle', tools: 0, restarts: 0 };
  }

  /** How the server is doing. */
  status(): McpServerStatus {
    return { ...this.#status };
  }

  get #timeoutMs(): number {
    return this.#config.timeout !== undefined ? this.#config.timeout * 1000 : MCP_DEFAULTS.timeoutMs;
  }

  /** The cap on the tools taken from the listing, and on each description's length. */
  get listingBounds(): { maxTools: number; maxDescriptionChars: number } {
    return {
      maxTools: this.#config.maxTools ?? MCP_DEFAULTS.maxTools,
      maxDescriptionChars: this.#config.maxDescriptionChars ?? MCP_DEFAULTS.maxDescriptionChars,
    };
  }

  /** The server's tools (starting it when it is not running). */
  async listTools(): Promise<ListedTool[]> {
    const client = await this.#connected();
    const { tools } = await client.listTools(undefined, { timeout: Math.max(this.#timeoutMs, START_TIMEOUT_MS) });
    this.#status.tools = tools.length;
    return tools;
  }

  /** Calls a tool: its structured content, else its text (one block) or its content; a tool error is thrown. */
  async call(tool: string, input: unknown, signal?: AbortSignal): Promise<unknown> {
    const label = `MCP server "${this.name}": tool "${tool}"`;
    const client = await this.#connected();
    let result: CallToolResult;
    try {
      result = (await client.callTool({ name: tool, arguments: (input ?? {}) as Record<string, unknown> }, undefined, {
        timeout: this.#timeoutMs,
        ...(signal ? { signal } : {}),
      })) as CallToolResult;
    } catch (error) {
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout)
        throw new AgoraError('TIMEOUT', `${label} did not answer within ${this.#timeoutMs} ms`);
      if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed)
        throw new AgoraError(
          'PEER_FAILURE',
          `${label}: the server closed the connection (it is started again on the next call)`,
        );
      throw new AgoraError('PEER_FAILURE', `${label}: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    }
    this.#deaths = 0;
    const value = valueOf(result);
    const max = this.#config.maxResultChars ?? MCP_DEFAULTS.maxResultChars;
    const size = typeof value === 'string' ? value.length : JSON.stringify(value ?? null).length;
    if (size > max)
      throw new AgoraError('INVALID_OUTPUT', `${label}: result of ${size} characters is over the cap of ${max}`);
    if (result.isError)
      throw new AgoraError(
        'PEER_FAILURE',
        `${label} failed: ${typeof value === 'string' ? value : JSON.stringify(value)}`,
      );
    return value;
  }

  /** Stops the server (a process is ended, an HTTP session closed). */
  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    this.#client = undefined;
    await client?.then((connected) => connected.close()).catch(() => undefined);
  }

  #connected(): Promise<Client> {
    if (this.#closed)
      return Promise.reject(new AgoraError('PEER_FAILURE', `MCP server "${this.name}": the agent is closing`));
    const wait = this.#restartAt - Date.now();
    if (this.#client === undefined && wait > 0)
      return Promise.reject(
        new AgoraError(
          'PEER_FAILURE',
          `MCP server "${this.name}" died ${this.#deaths} time${this.#deaths === 1 ? '' : 's'} in a row; it is started again in ${Math.ceil(wait / 1000)} s`,
        ),
      );
    this.#client ??= this.#connect().catch((error: unknown) => {
      this.#client = undefined;
      this.#status.state = 'failed';
      this.#status.error = error instanceof Error ? error.message : String(error);
      throw new AgoraError('PEER_FAILURE', `MCP server "${this.name}" did not start: ${this.#status.error}`, {
        cause: error,
      });
    });
    return this.#client;
  }

  async #connect(): Promise<Client> {
    const client = new Client({ name: 'agora-agent', version: '1.0.0' });
    const config = this.#config;
    const transport = isStdio(config)
      ? new StdioClientTransport({
          command: config.command,
          args: config.args,
          env: { ...inheritedEnv(), ...config.env },
          cwd: config.cwd ?? this.#dir,
          stderr: 'pipe',
        })
      : new StreamableHTTPClientTransport(new URL(config.url), {
          requestInit: { headers: config.headers },
          // Every response is read under the cap as it arrives: a 200 MB answer is cut at the cap, never parsed.
          fetch: boundedFetch({
            maxReplyBytes: config.maxResponseBytes ?? MCP_DEFAULTS.maxResponseBytes,
            timeoutMs: Math.max(this.#timeoutMs, START_TIMEOUT_MS),
          }),
        });
    if (transport instanceof StdioClientTransport) {
      transport.stderr?.on('data', (chunk: Buffer) =>
        this.#logger.debug?.(`mcp ${this.name}: ${chunk.toString().trimEnd()}`),
      );
    }
    // A server that dies is started again on a later call, not at once, and after a longer wait at each death in a
    // row: a server that exits on every call costs one start per wait, not one per query.
    client.onclose = () => {
      if (this.#closed) return;
      this.#client = undefined;
      this.#deaths += 1;
      const first =
        this.#config.restartDelay !== undefined ? this.#config.restartDelay * 1000 : MCP_DEFAULTS.restartDelayMs;
      const delay = Math.min(first * 2 ** (this.#deaths - 1), Math.max(first, MCP_DEFAULTS.maxRestartDelayMs));
      this.#restartAt = Date.now() + delay;
      this.#status.state = 'failed';
      this.#status.error = 'exited';
      this.#logger.warn(`MCP server "${this.name}" closed; it is started again on a call after ${delay} ms`);
    };
    await client.connect(transport, { timeout: START_TIMEOUT_MS });
    if (this.#started) this.#status.restarts += 1;
    this.#started = true;
    this.#status.state = 'running';
    delete this.#status.error;
    return client;
  }
}

// The SDK's own default for stdio servers is a short safe list; PATH and HOME are what commands like `npx` need.
function inheritedEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'USER', 'SHELL', 'TERM', 'LANG', 'TMPDIR', 'SystemRoot', 'APPDATA']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

function valueOf(result: CallToolResult): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const content = result.content ?? [];
  if (content.length === 1 && content[0]!.type === 'text') return content[0]!.text;
  return content;
}
