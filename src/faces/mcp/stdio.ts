// `agora mcp <agent-url>`: any Agora agent, local or remote, as an MCP server on stdin/stdout, for hosts that start
// MCP servers as processes (Claude Desktop, Claude Code, IDEs). The tools and resources are the MCP face's; the
// process is one session, so a multiround protocol's calls are the turns of one conversation.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { randomUUID } from 'node:crypto';
import { remoteReceiver, type RemoteOptions } from './remote.js';
import { createMcpServer } from './server.js';
import { FaceSessions, sessionKey } from '../sessions.js';
import { McpToolTable } from './tools.js';

/** Options of {@link serveMcpStdio}: how the agent is reached, and the streams (default the process's). */
export type McpStdioOptions = RemoteOptions & {
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream;
  /**
   * How often the agent's `/wellknown` is read to notice a protocol added or removed, ms (default 30 000; 0: never).
   * A change is sent to the host as `notifications/tools/list_changed` and `notifications/resources/list_changed`.
   */
  pollMs?: number;
};

/**
 * Serves the agent at `url` as an MCP server over stdio; resolves when the host closes the connection.
 * @example await serveMcpStdio('http://localhost:3000', { token: process.env.AGORA_TOKEN });
 */
export async function serveMcpStdio(url: string, options: McpStdioOptions = {}): Promise<void> {
  const receiver = remoteReceiver(url, options);
  // Whether a remote agent has an LLM cannot be seen: `ask` is offered, and the agent's refusal is a tool error.
  const tools = new McpToolTable(receiver, { naturalLanguage: true });
  // The process is the session: it lives until the host closes the connection.
  const sessions = new FaceSessions('mcp', undefined, { idleMs: 365 * 24 * 3_600_000 });
  const session = sessionKey(undefined, randomUUID());
  await sessions.open(session);
  const server = createMcpServer({ receiver, tools, sessions, name: new URL(url).host || 'agora-agent', version: '1.0.0' }, () => session);
  const transport = new StdioServerTransport(
    (options.input ?? process.stdin) as ConstructorParameters<typeof StdioServerTransport>[0],
    (options.output ?? process.stdout) as ConstructorParameters<typeof StdioServerTransport>[1],
  );
  const closed = new Promise<void>((resolve) => (server.onclose = resolve));
  await server.connect(transport);
  (options.input ?? process.stdin).once('end', () => void server.close());
  const stopWatching = watchProtocols(receiver, options.pollMs ?? 30_000, () => {
    tools.invalidate();
    void server.sendToolListChanged().catch(() => undefined);
    void server.sendResourceListChanged().catch(() => undefined);
  });
  await closed;
  stopWatching();
  await sessions.close(session, receiver).catch(() => undefined);
}

/**
 * Reads the agent's protocol list every `everyMs` and calls `changed` when it differs from the last one read; an
 * agent that does not answer changes nothing. Returns the function that stops it.
 */
function watchProtocols(receiver: ReturnType<typeof remoteReceiver>, everyMs: number, changed: () => void): () => void {
  if (everyMs <= 0) return () => {};
  let last: string | undefined;
  let busy = false;
  const read = async () => {
    if (busy) return;
    busy = true;
    try {
      const listed = Object.keys(await receiver.wellknown()).sort().join(',');
      if (last !== undefined && listed !== last) changed();
      last = listed;
    } catch {
      // Unreachable for now: the list is read again on the next tick.
    } finally {
      busy = false;
    }
  };
  void read();
  const timer = setInterval(() => void read(), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
