// An agent as an MCP server, built with `@modelcontextprotocol/sdk`'s `Server`: its tools (one per protocol, `ask`),
// its protocol documents as resources, and list_changed notifications. The HTTP face builds its server here; `agora
// mcp` (stdio) answers with the same functions for an agent that has no MCP face. This module is loaded only when one
// of them serves.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type CallToolResult,
  type ListResourcesResult,
  type ListToolsResult,
  type ReadResourceResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { isAgoraError } from '../../errors.js';
import type { ReceiverApi, RequestContext } from '../../receiver.js';
import type { JsonValue, SuccessResponse } from '../../schemas.js';
import type { FaceSessions } from '../../faces/sessions.js';
import { bodyOfCall, type McpTool, type McpToolTable } from './tools.js';

/** What an agent's MCP server answers from. */
export type McpServerSource = {
  receiver: ReceiverApi;
  tools: McpToolTable;
  /** The server's name and version in `initialize`. */
  name: string;
  version: string;
  /** Where sessions' conversations are kept; without it, every call is single-round. */
  sessions?: FaceSessions;
};

/** The URI of a protocol document as an MCP resource. */
export function resourceUri(hash: string): string {
  return `agora://protocols/${hash}`;
}

const RESOURCE_URI = /^agora:\/\/protocols\/([0-9a-f]{40})$/;
// MCP's "resource not found" (the spec's own code, not in the SDK's enum).
const RESOURCE_NOT_FOUND = -32002;

/** The text a reply body shows: a string as it is, any other JSON serialized. */
function textOf(body: JsonValue): string {
  return typeof body === 'string' ? body : JSON.stringify(body);
}

function resultOf(tool: McpTool, reply: SuccessResponse): CallToolResult {
  const result: CallToolResult = { content: [{ type: 'text', text: textOf(reply.body) }] };
  if (
    tool.outputSchema !== undefined &&
    typeof reply.body === 'object' &&
    reply.body !== null &&
    !Array.isArray(reply.body)
  ) {
    result.structuredContent = reply.body as Record<string, unknown>;
  }
  return result;
}

/**
 * Answers a tool call: an Agora query under the tool's protocol (or in natural language for `ask`); in a session, a
 * multiround tool's calls are the turns of one conversation. A refusal of the agent's is a tool error (`isError`).
 */
export async function callTool(
  source: McpServerSource,
  name: string,
  args: Record<string, unknown> | undefined,
  session: string | undefined,
  context: RequestContext,
): Promise<CallToolResult> {
  const tool = await source.tools.find(name);
  if (tool === undefined) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
  const query = { ...(tool.hash !== undefined ? { protocolHash: tool.hash } : {}), body: bodyOfCall(tool, args) };
  try {
    const reply =
      session !== undefined && tool.multiround && source.sessions !== undefined
        ? await source.sessions.turn(source.receiver, session, `tool:${tool.name}`, query, context)
        : await source.receiver.query(query, context);
    return resultOf(tool, reply);
  } catch (error) {
    if (!isAgoraError(error)) throw error;
    return { content: [{ type: 'text', text: `${error.code}: ${error.message}` }], isError: true };
  }
}

/** Answers `tools/list`: the tools of `source`. */
export async function listTools(source: McpServerSource): Promise<ListToolsResult> {
  return {
    tools: (await source.tools.list()).map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: tool.inputSchema,
      ...(tool.outputSchema !== undefined ? { outputSchema: tool.outputSchema } : {}),
    })),
  };
}

/** Answers `resources/list`: the protocol documents of `source`. */
export async function listResources(source: McpServerSource): Promise<ListResourcesResult> {
  return {
    resources: (await source.tools.list())
      .filter((tool) => tool.hash !== undefined)
      .map((tool) => ({
        uri: resourceUri(tool.hash!),
        name: tool.name,
        title: tool.title,
        description: tool.summary,
        mimeType: 'text/markdown',
      })),
  };
}

/** Answers `resources/read`: a protocol document by its `agora://protocols/<hash>` URI. */
export async function readResource(source: McpServerSource, uri: string): Promise<ReadResourceResult> {
  const hash = RESOURCE_URI.exec(uri)?.[1];
  const text = hash === undefined ? undefined : await source.receiver.document(hash);
  if (text === undefined) throw new McpError(RESOURCE_NOT_FOUND, `Resource not found: ${uri}`);
  return { contents: [{ uri, mimeType: 'text/markdown', text }] };
}

/**
 * A new SDK `Server` answering from `source`; `sessionOf` reads a request's session key (the HTTP face's
 * `Mcp-Session-Id` scoped by the caller's token, or the one session of a stdio server); `jsonSchemaValidator` shared by
 * the servers of many requests.
 */
export function createMcpServer(
  source: McpServerSource,
  sessionOf: (headers: Record<string, unknown> | undefined) => string | undefined,
  jsonSchemaValidator?: jsonSchemaValidator,
): Server {
  const server = new Server(
    { name: source.name, version: source.version },
    {
      capabilities: { tools: { listChanged: true }, resources: { listChanged: true } },
      ...(jsonSchemaValidator ? { jsonSchemaValidator } : {}),
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => listTools(source));
  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    callTool(source, request.params.name, request.params.arguments, sessionOf(extra.requestInfo?.headers), {
      signal: extra.signal,
    }),
  );
  server.setRequestHandler(ListResourcesRequestSchema, () => listResources(source));
  server.setRequestHandler(ReadResourceRequestSchema, (request) => readResource(source, request.params.uri));
  return server;
}
