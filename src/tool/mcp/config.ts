// An agent's `mcp.json`: the MCP servers whose tools join the agent's, in the shape MCP hosts use
// (`{"mcpServers": {"name": {"command", "args", "env"} | {"url", "headers"}}}`), plus optional bounds per server.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { AgoraError } from '../../errors.js';

const bounds = {
  /** Longest tool call, seconds (default 30). */
  timeout: z.number().positive().max(3600).optional(),
  /** Largest tool result, characters of its JSON (default 100 000). */
  maxResultChars: z.number().int().positive().optional(),
  /** Largest HTTP response (a result, a listing), bytes, counted while reading (default 4 MiB); HTTP servers only. */
  maxResponseBytes: z.number().int().positive().optional(),
  /** Tools taken from the server's listing; the rest are left out, with a warning (default 256). */
  maxTools: z.number().int().positive().optional(),
  /** Longest tool description kept, characters; longer ones are cut (default 2 000). */
  maxDescriptionChars: z.number().int().positive().optional(),
  /** Seconds before a server that died is started again, doubled at each death in a row, to 60 s (default 1). */
  restartDelay: z.number().nonnegative().max(3600).optional(),
};

/** The defaults of the bounds of each server of `mcp.json` (durations in ms). */
export const MCP_DEFAULTS = {
  timeoutMs: 30_000,
  maxResultChars: 100_000,
  maxResponseBytes: 4 * 1024 * 1024,
  maxTools: 256,
  maxDescriptionChars: 2_000,
  restartDelayMs: 1_000,
  maxRestartDelayMs: 60_000,
} as const;

const stdioServer = z.object({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  cwd: z.string().optional(),
  ...bounds,
});
const httpServer = z.object({
  url: z.url({ protocol: /^https?$/ }),
  headers: z.record(z.string(), z.string()).default({}),
  ...bounds,
});

/** One server of `mcp.json`: a process started with a command (stdio), or a Streamable HTTP endpoint. */
export type McpServerConfig = z.output<typeof stdioServer> | z.output<typeof httpServer>;

const configSchema = z.object({
  mcpServers: z.record(
    z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, 'a server name is 1-32 letters, digits, _ or -'),
    z.union([stdioServer, httpServer]),
  ),
});

/** Whether a server is started as a process. */
export function isStdio(config: McpServerConfig): config is z.output<typeof stdioServer> {
  return 'command' in config;
}

/** The servers of `<dir>/mcp.json`, by name; none when the file is absent. A file that does not parse is an INVALID_ARGUMENT naming it. */
export async function readMcpConfig(dir: string): Promise<Record<string, McpServerConfig>> {
  const file = join(dir, 'mcp.json');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new AgoraError('INVALID_ARGUMENT', `${file}: not JSON (${(error as Error).message})`);
  }
  const parsed = configSchema.safeParse(value);
  if (!parsed.success) throw new AgoraError('INVALID_ARGUMENT', `${file}: ${z.prettifyError(parsed.error)}`);
  return parsed.data.mcpServers;
}
