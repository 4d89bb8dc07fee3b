// How the bridge words what went wrong with the agent behind it, for the host: what the agent answered, or that it
// did not; whether nothing at the URL speaks MCP. The agent's text is bounded and sanitised.
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { AgoraError, isAgoraError } from '../../errors.js';
import { peerText, seconds, shownUrl } from './_wording.js';

// The remote's refusals a client should not take for "no MCP face here": a wrong token, a full agent, a timeout.
const PASSING_STATUSES = new Set([401, 403, 408, 429]);

/** Whether an `initialize` failed because nothing at the URL speaks MCP (rather than refusing or failing us). */
export function hasNoMcpFace(error: unknown): boolean {
  if (error instanceof StreamableHTTPError) {
    const status = error.code ?? -1;
    return status === -1 || (status >= 400 && status < 500 && !PASSING_STATUSES.has(status));
  }
  // A reply that is JSON but not JSON-RPC, or not JSON at all: the SDK's parse failures.
  return error instanceof SyntaxError || (error instanceof Error && /ZodError/.test(error.name));
}

/** Whether an error is the SDK's word for a connection that closed under a request (not an agent's -32000). */
export function isClosed(error: McpError): boolean {
  return error.code === ErrorCode.ConnectionClosed && /Connection closed$/.test(error.message);
}

/**
 * A JSON-RPC error the agent answered, passed on as the agent worded it: the SDK's client and server each put
 * `MCP error <code>: ` before a message, so the host's client, adding its own, reads what it would over HTTP.
 */
export function answeredError(error: McpError): McpError {
  const message = error.message.replace(/^(?:MCP error -?\d+: )+/, '');
  return new McpError(error.code, peerText(message, 1000));
}

// Error bodies as MCP servers write them (`{"jsonrpc": "2.0", "error": {"code", "message"}}`) and as the Agora wire
// does (`{"status": "failure", "error": "Not found"}`).
const errorBodySchema = z.object({ error: z.union([z.string(), z.object({ message: z.string() })]) });

/** What an HTTP refusal's body says: the error's message when it is one, else its text. */
function refusalText(error: StreamableHTTPError): string {
  const text = error.message
    .replace(/^Streamable HTTP error: /, '')
    .replace(/^(?:Error POSTing to endpoint|Failed to open SSE stream|Failed to terminate session):? ?/, '');
  try {
    const parsed = errorBodySchema.safeParse(JSON.parse(text));
    if (parsed.success) return typeof parsed.data.error === 'string' ? parsed.data.error : parsed.data.error.message;
  } catch {
    // Not JSON: the text itself.
  }
  return text;
}

/**
 * A failure of an exchange with the agent at `endpoint`, worded for a host: what it answered (`answered 503: …`), or
 * that it did not (`no answer within 30 s`, `connection refused`). The agent's text is bounded and sanitised.
 */
export function failureOf(
  endpoint: string,
  error: unknown,
  how: { timedOut?: boolean; timeoutMs?: number } = {},
): AgoraError {
  const agent = `agent at ${shownUrl(endpoint)}`;
  const timeout = () =>
    new AgoraError('TIMEOUT', `${agent}: no answer within ${seconds(how.timeoutMs ?? 0)}`, { cause: error });
  if (how.timedOut || (isAgoraError(error) && error.code === 'TIMEOUT')) return timeout();
  if (error instanceof StreamableHTTPError) {
    const said = peerText(refusalText(error));
    if (error.code === undefined || error.code === -1)
      return new AgoraError('PEER_FAILURE', `${agent} did not answer as MCP: ${said}`, { cause: error });
    return new AgoraError('PEER_FAILURE', `${agent} answered ${error.code}${said ? `: ${said}` : ''}`, {
      cause: error,
      status: error.code,
    });
  }
  if (isAgoraError(error)) {
    // The bounded fetch names the method and URL first (`POST http://…/mcp: connection refused`): the rest is the news.
    const detail = error.message.replace(/^[A-Z]+ \S+: /, '');
    return new AgoraError('PEER_FAILURE', `${agent}: ${peerText(detail)}`, {
      cause: error,
      ...(error.status !== undefined ? { status: error.status } : {}),
    });
  }
  if (error instanceof McpError && isClosed(error))
    return new AgoraError('PEER_FAILURE', `${agent}: the connection closed`, { cause: error });
  const detail = error instanceof Error ? error.message : String(error);
  return new AgoraError('PEER_FAILURE', `${agent} did not answer as MCP: ${peerText(detail)}`, { cause: error });
}
