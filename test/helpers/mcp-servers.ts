// Small MCP servers written with the SDK, for the tests of `mcp.json`: one over stdio (this file, run as a process
// with `stdio` as its argument) and one over Streamable HTTP on loopback (`startHttpMcpServer`).
import { createServer, type Server as HttpServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/** The path of this file, to start its stdio server: `node --import tsx <path> stdio`. */
export const MCP_SERVERS_FILE = fileURLToPath(import.meta.url);

function calculator(): McpServer {
  const server = new McpServer({ name: 'calc', version: '1.0.0' });
  server.registerTool(
    'add',
    {
      description: 'Adds two numbers',
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
    },
    ({ a, b }) => ({
      content: [{ type: 'text', text: String(a + b) }],
      structuredContent: { sum: a + b },
    }),
  );
  server.registerTool('pid', { description: 'The server process id' }, () => ({
    content: [{ type: 'text', text: String(process.pid) }],
  }));
  server.registerTool('crash', { description: 'Exits the server process' }, () => process.exit(3));
  server.registerTool('hang', { description: 'Never answers' }, () => new Promise<never>(() => {}));
  server.registerTool('big', { description: 'A large result' }, () => ({
    content: [{ type: 'text', text: 'x'.repeat(200_000) }],
  }));
  return server;
}

function shouter(): McpServer {
  const server = new McpServer({ name: 'web', version: '1.0.0' });
  server.registerTool(
    'shout',
    { description: 'Upper-cases a text', inputSchema: { text: z.string() } },
    ({ text }) => ({ content: [{ type: 'text', text: text.toUpperCase() }] }),
  );
  return server;
}

/** Starts the HTTP server (stateless, a new SDK server per request) on a free loopback port. */
export async function startHttpMcpServer(): Promise<{ url: string; calls: number; close(): Promise<void> }> {
  const state = { calls: 0 };
  const http: HttpServer = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = chunks.length > 0 ? (JSON.parse(Buffer.concat(chunks).toString()) as unknown) : undefined;
    if ((body as { method?: string } | undefined)?.method === 'tools/call') state.calls += 1;
    const server = shouter();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    response.on('close', () => void server.close());
    await server.connect(transport);
    await transport.handleRequest(request, response, body);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get calls() {
      return state.calls;
    },
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

if (process.argv[2] === 'stdio') await calculator().connect(new StdioServerTransport());
