// MCP on both sides: its face (`/mcp`, Streamable HTTP: one tool per served protocol, `ask` for natural language),
// and its client side, `agora mcp` (an agent, Agora or MCP, as a stdio MCP server: `serveMcpStdio`, `McpBridge`).
// An MCP server is a tool, not an agent: it has no probe and no peer client of `askPeer`'s.
import type { Binding } from '../binding.js';
import { mcpFace, type McpOptions } from './face.js';

/** MCP, both directions (the client side is `agora mcp`'s). */
export const mcp = {
  name: 'mcp',
  face: mcpFace,
} satisfies Binding<'mcp', McpOptions>;
