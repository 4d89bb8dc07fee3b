// The tools of the MCP servers an agent's `mcp.json` names, as agent tools: the LLM calls them through tool use and
// routines as `context.tools.<server>_<tool>(input)`, LLM-written routines through the same tool bridge as any tool.
// Servers start when first needed; one that fails is reported (status, log), never fatal: the agent serves on
// without its tools.
import { z } from 'zod';
import { AgoraError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { defineTool, type Tool } from '../define.js';
import { readMcpConfig, type McpServerConfig } from './config.js';
import type { McpConnection, McpServerStatus } from './connection.js';

export type { McpServerStatus } from './connection.js';
export { readMcpConfig, type McpServerConfig } from './config.js';

/**
 * The MCP servers of an agent and the tools they bring. Nothing starts when the agent loads: a server starts, and
 * lists its tools, when a tool of it is first needed (see {@link McpTools.ready} and {@link McpTools.toolFor}).
 */
export type McpTools = {
  /** The tools listed so far (none before a server has started). */
  tools(): Tool[];
  /**
   * Starts every server not listed yet and lists its tools; resolves when each started for the first time has answered
   * or failed (a failure is reported, never thrown). A server that failed before is tried again in the background: an
   * answer never waits on a broken server twice. `undefined` when there is nothing to wait for.
   */
  ready(): Promise<void> | undefined;
  /** The tool of this agent-tool name (`<server>_<tool>`), starting only the server it names; undefined if none. */
  toolFor(name: string): Promise<Tool | undefined>;
  /** Whether a name can be a tool of a server not listed yet (`<server>_…`). */
  mayServe(name: string): boolean;
  /** Whether a server has not listed its tools yet. */
  pending(): boolean;
  /** How each server is doing (for `agora serve`'s banner and the dashboard). */
  status(): McpServerStatus[];
  close(): Promise<void>;
};

/** An agent tool's name for a server's tool: `<server>_<tool>`, in the tool name rules (1-64 of `[A-Za-z0-9_-]`). */
export function mcpToolName(server: string, tool: string): string {
  return `${server}_${tool}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}

// The input as zod sees it: the server's JSON Schema when zod can read it, else any object (the server checks it).
function inputOf(schema: Record<string, unknown>): z.ZodType {
  try {
    return z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    return z.record(z.string(), z.unknown());
  }
}

// A server that failed to start is tried again on a later need, not on every query.
const RETRY_AFTER_MS = 30_000;

/**
 * Reads `<dir>/mcp.json`; starts no server (each starts when first needed, see {@link McpTools}). No file: no tools,
 * and the SDK is not loaded.
 */
export async function loadMcpTools(
  dir: string,
  logger: Logger,
  servers?: Record<string, McpServerConfig>,
): Promise<McpTools> {
  const config = servers ?? (await readMcpConfig(dir));
  const names = Object.keys(config);
  if (names.length === 0)
    return {
      tools: () => [],
      ready: () => undefined,
      toolFor: async () => undefined,
      mayServe: () => false,
      pending: () => false,
      status: () => [],
      close: async () => {},
    };
  const { McpConnection } = await import('./connection.js');
  const entries = names.map((name) => ({
    connection: new McpConnection(name, config[name]!, { dir, logger }),
    prefix: mcpToolName(name, ''),
    tools: undefined as Tool[] | undefined,
    listing: undefined as Promise<void> | undefined,
    failedAt: 0,
  }));
  type Server = (typeof entries)[number];
  let all: Tool[] = [];

  const list = (server: Server): Promise<void> =>
    (server.listing ??= server.connection
      .listTools()
      .then((listed) => {
        const { maxTools, maxDescriptionChars } = server.connection.listingBounds;
        if (listed.length > maxTools)
          logger.warn(
            `MCP server "${server.connection.name}" lists ${listed.length} tools; the first ${maxTools} are used (maxTools)`,
          );
        server.tools = listed.slice(0, maxTools).map((tool) => toolOf(server.connection, tool, maxDescriptionChars));
        all = entries.flatMap((each) => each.tools ?? []);
        logger.info(
          `MCP server "${server.connection.name}" started: ${listed.length} tool${listed.length === 1 ? '' : 's'}`,
        );
      })
      .catch((error: unknown) => {
        server.failedAt = Date.now();
        logger.error(
          `MCP server "${server.connection.name}" failed: ${error instanceof Error ? error.message : String(error)}; the agent serves without its tools`,
        );
      })
      .finally(() => {
        server.listing = undefined;
      }));
  const due = (server: Server) =>
    server.tools === undefined && (server.listing !== undefined || Date.now() - server.failedAt >= RETRY_AFTER_MS);

  return {
    tools: () => all,
    ready() {
      const pending = entries.filter(due);
      for (const server of pending) if (server.failedAt !== 0) void list(server);
      const first = pending.filter((server) => server.failedAt === 0);
      return first.length === 0 ? undefined : Promise.all(first.map(list)).then(() => undefined);
    },
    async toolFor(name) {
      // The longest prefix wins: servers "a" and "a_b" both claim "a_b_c".
      const server = entries
        .filter((each) => name.startsWith(each.prefix))
        .sort((a, b) => b.prefix.length - a.prefix.length)[0];
      if (!server) return undefined;
      if (due(server)) await list(server);
      if (server.tools === undefined)
        throw new AgoraError(
          'PEER_FAILURE',
          `MCP server "${server.connection.name}" did not start: ${server.connection.status().error ?? 'unknown error'}`,
        );
      return server.tools.find((tool) => tool.name === name);
    },
    mayServe: (name) => entries.some((server) => server.tools === undefined && name.startsWith(server.prefix)),
    pending: () => entries.some((server) => server.tools === undefined),
    status: () => entries.map((server) => server.connection.status()),
    close: async () => {
      await Promise.all(entries.map((server) => server.connection.close()));
    },
  };
}

function toolOf(
  connection: McpConnection,
  tool: { name: string; description?: string | undefined; inputSchema: Record<string, unknown> },
  maxDescriptionChars: number,
): Tool {
  const text = tool.description ?? tool.name;
  const description = text.length > maxDescriptionChars ? `${text.slice(0, maxDescriptionChars)}…` : text;
  return defineTool({
    name: mcpToolName(connection.name, tool.name),
    description: `${description} (tool "${tool.name.slice(0, 64)}" of MCP server "${connection.name}")`,
    input: inputOf(tool.inputSchema),
    run: (input, context) => connection.call(tool.name, input, context.signal),
  });
}
