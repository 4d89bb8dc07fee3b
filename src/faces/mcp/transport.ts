// One POST to `/mcp` through the SDK: a stateless Streamable HTTP transport answering in JSON, connected to a new
// server for that request (the SDK's stateless mode). Sessions are the face's, so nothing here outlives the request.
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { createMcpServer, type McpServerSource } from './server.js';

function sessionOf(headers: Record<string, unknown> | undefined): string | undefined {
  const value = headers?.['mcp-session-id'];
  return typeof value === 'string' ? value : undefined;
}

/** The SDK's answer to one POSTed JSON-RPC message (or batch), already parsed from the body. */
export async function answer(source: McpServerSource, request: Request, message: unknown, signal: AbortSignal | undefined): Promise<Response> {
  const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true });
  const server = createMcpServer(source, sessionOf);
  await server.connect(transport);
  const close = () => void server.close().catch(() => undefined);
  signal?.addEventListener('abort', close, { once: true });
  try {
    return await transport.handleRequest(request, { parsedBody: message });
  } finally {
    signal?.removeEventListener('abort', close);
    close();
  }
}
