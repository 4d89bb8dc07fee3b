// What the MCP tests share: an agent folder's protocols and routines, and an SDK client over Streamable HTTP.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export const UNITS_PD =
  '---\nname: Unit conversion\ndescription: Converts metres to feet.\nmultiround: false\n---\nSend {"metres": number}; the reply is {"feet": number}.\n';
export const UNITS_ROUTINE = `import { defineRoutine } from '${new URL('../../../src/index.ts', import.meta.url).pathname}';
import { z } from 'zod';
export default defineRoutine({
  input: z.object({ metres: z.number() }),
  output: z.object({ feet: z.number() }),
  handle: ({ metres }) => ({ feet: Math.round(metres * 3.28084 * 100) / 100 }),
});
`;
export const COUNTER_PD =
  '---\nname: Counter\ndescription: Adds numbers over turns.\nmultiround: true\n---\nSend {"add": number}; the reply is {"count": number}.\n';
export const COUNTER_ROUTINE = `export default function (body: { add: number }, context: any) {
  const state = context.conversation.state;
  state.count = (typeof state.count === 'number' ? state.count : 0) + body.add;
  return { count: state.count, pid: process.pid };
}
`;

/** An SDK client connected to `url`'s `/mcp`, with extra headers (a token, an Origin). */
export async function connect(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'agora-test-host', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }));
  return client;
}
