// The tools of the MCP servers an agent's `mcp.json` names, as agent tools: the LLM calls them through tool use and
// routines as `context.tools.<server>_<tool>(input)`, LLM-written routines through the same tool bridge as any tool.
// A server that fails is reported (status, log), never fatal: the agent serves on without its tools.
import { z } from 'zod';
import type { Logger } from '../../log.js';
import { defineTool, type Tool } from '../define.js';
import { readMcpConfig, type McpServerConfig } from './config.js';
import type { McpConnection, McpServerStatus } from './connection.js';

export type { McpServerStatus } from './connection.js';
export { readMcpConfig, type McpServerConfig } from './config.js';

/** The MCP servers of an agent and the tools they bring. */
export type McpTools = {
  tools: Tool[];
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

/**
 * Reads `<dir>/mcp.json` and lists each server's tools (servers start in parallel; one that fails is reported and
 * brings no tools). No file: no tools, and the SDK is not loaded.
 */
export async function loadMcpTools(dir: string, logger: Logger, servers?: Record<string, McpServerConfig>): Promise<McpTools> {
  const config = servers ?? (await readMcpConfig(dir));
  const names = Object.keys(config);
  if (names.length === 0) return { tools: [], status: () => [], close: async () => {} };
  const { McpConnection } = await import('./connection.js');
  const connections = names.map((name) => new McpConnection(name, config[name]!, { dir, logger }));
  const listed = await Promise.all(
    connections.map(async (connection) => {
      try {
        return { connection, tools: await connection.listTools() };
      } catch (error) {
        logger.error(`MCP server "${connection.name}" failed: ${error instanceof Error ? error.message : String(error)}; the agent serves without its tools`);
        return { connection, tools: [] };
      }
    }),
  );
  const tools = listed.flatMap(({ connection, tools: served }) => served.map((tool) => toolOf(connection, tool)));
  return {
    tools,
    status: () => connections.map((connection) => connection.status()),
    close: async () => {
      await Promise.all(connections.map((connection) => connection.close()));
    },
  };
}

function toolOf(connection: McpConnection, tool: { name: string; description?: string | undefined; inputSchema: Record<string, unknown> }): Tool {
  return defineTool({
    name: mcpToolName(connection.name, tool.name),
    description: `${tool.description ?? tool.name} (tool "${tool.name}" of MCP server "${connection.name}")`,
    input: inputOf(tool.inputSchema),
    run: (input, context) => connection.call(tool.name, input, context.signal),
  });
}
