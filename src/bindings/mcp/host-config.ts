// The MCP host configuration that starts `agora mcp` from this very install: node and bin/agora.js by absolute
// paths, so a host (Claude Desktop, Claude Code, an IDE) that starts it from its own folder, with its own PATH and no
// network, runs this package and never resolves a registry package by name (`npx agora` is someone else's).
import { fileURLToPath } from 'node:url';

/** One server entry of an MCP host's `mcpServers` (the stdio shape: a command, its arguments, its environment). */
export type McpHostServer = { command: string; args: string[]; env?: Record<string, string> };

/** Options of {@link mcpHostConfig}. */
export type McpHostConfigOptions = {
  /** The key under `mcpServers` (default `agora`). */
  name?: string;
  /** A bearer token for the agent, passed as `AGORA_TOKEN` in the server's environment. */
  token?: string;
  /** Extra arguments of `agora mcp` after the URL (`--timeout`, `--poll`). */
  args?: string[];
  /** The Node executable (default the one running now). */
  node?: string;
};

/** This install's CLI script, an absolute path (`bin/agora.js` beside `dist/` and `src/`). */
export function cliScript(): string {
  return fileURLToPath(new URL('../../../bin/agora.js', import.meta.url));
}

/**
 * The `mcpServers` configuration that runs `agora mcp <url>` from this install, by absolute paths.
 * @example mcpHostConfig('http://127.0.0.1:3000', { name: 'units' })
 * // { mcpServers: { units: { command: '/usr/bin/node', args: ['/…/bin/agora.js', 'mcp', 'http://127.0.0.1:3000'] } } }
 */
export function mcpHostConfig(
  url: string,
  options: McpHostConfigOptions = {},
): { mcpServers: Record<string, McpHostServer> } {
  const server: McpHostServer = {
    command: options.node ?? process.execPath,
    args: [cliScript(), 'mcp', url, ...(options.args ?? [])],
  };
  if (options.token) server.env = { AGORA_TOKEN: options.token };
  return { mcpServers: { [options.name ?? 'agora']: server } };
}
