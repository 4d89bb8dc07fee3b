// The face answers a plain `tools/call` (id, name, arguments) without the SDK's server: every such answer must be the
// one the SDK's server gives. A `_meta` sends the same call through the SDK, so each case is asked both ways.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../../src/agent.js';
import { silentLogger } from '../../../src/log.js';
import { makeAgentFolder } from '../../helpers/agent-folder.js';
import { connect, COUNTER_PD, COUNTER_ROUTINE, UNITS_PD, UNITS_ROUTINE } from './_fixtures.js';

const HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-06-18',
};

describe('a plain tools/call, answered without the SDK server', () => {
  let folder: Awaited<ReturnType<typeof makeAgentFolder>>;
  let agent: RunningAgent;
  let session: string;

  const post = async (message: unknown) => {
    const response = await fetch(`${agent.url}/mcp`, {
      method: 'POST',
      headers: { ...HEADERS, 'mcp-session-id': session },
      body: JSON.stringify(message),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  // The same call by both paths: as sent, and with an empty `_meta` (which only the SDK's server takes).
  const both = async (id: string | number, params: Record<string, unknown>) => {
    const fast = await post({ jsonrpc: '2.0', id, method: 'tools/call', params });
    const sdk = await post({ jsonrpc: '2.0', id, method: 'tools/call', params: { ...params, _meta: {} } });
    return { fast, sdk };
  };

  beforeAll(async () => {
    folder = await makeAgentFolder({
      'protocols/units.md': UNITS_PD,
      'routines/units.ts': UNITS_ROUTINE,
      'protocols/counter.md': COUNTER_PD,
      'routines/counter.ts': COUNTER_ROUTINE,
    });
    agent = await startAgent({ dir: folder.dir, port: 0, host: '127.0.0.1', logger: silentLogger, dashboard: false });
    const response = await fetch(`${agent.url}/mcp`, {
      method: 'POST',
      headers: HEADERS,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } },
      }),
    });
    session = response.headers.get('mcp-session-id')!;
    expect(session).toBeTruthy();
  });

  afterAll(async () => {
    await agent?.close();
    await folder?.cleanup();
  });

  it('answers a tool, a refusal, an unknown tool and missing arguments exactly as the SDK server does', async () => {
    const cases: [string | number, Record<string, unknown>][] = [
      [1, { name: 'unit_conversion', arguments: { metres: 10 } }],
      ['two', { name: 'unit_conversion', arguments: { metres: 'ten' } }],
      [3, { name: 'unit_conversion' }],
      [4, { name: 'no_such_tool', arguments: {} }],
      [5, { name: 'counter', arguments: {} }],
    ];
    for (const [id, params] of cases) {
      const { fast, sdk } = await both(id, params);
      expect(fast, JSON.stringify(params)).toEqual(sdk);
      expect(fast.body.id).toBe(id);
    }
    const { fast } = await both(1, { name: 'unit_conversion', arguments: { metres: 10 } });
    expect(fast.body.result).toEqual({
      content: [{ type: 'text', text: '{"feet":32.81}' }],
      structuredContent: { feet: 32.81 },
    });
    const unknown = (await both(4, { name: 'no_such_tool', arguments: {} })).fast.body;
    expect(unknown.error).toEqual({ code: -32602, message: 'MCP error -32602: Unknown tool: no_such_tool' });
  });

  it("continues one session's conversation across both paths", async () => {
    const counts: number[] = [];
    for (const meta of [false, true, false]) {
      const params = { name: 'counter', arguments: { body: { add: 1 } }, ...(meta ? { _meta: {} } : {}) };
      const { body } = await post({ jsonrpc: '2.0', id: counts.length, method: 'tools/call', params });
      const result = body.result as { content: { text: string }[] };
      counts.push((JSON.parse(result.content[0]!.text) as { count: number }).count);
    }
    expect(counts).toEqual([1, 2, 3]);
  });

  it('leaves what is not a plain call to the SDK: a bad id, arguments that are not an object', async () => {
    const badId = await post({ jsonrpc: '2.0', id: 1.5, method: 'tools/call', params: { name: 'unit_conversion' } });
    expect(badId.status).toBe(400);
    const { fast, sdk } = await both(6, { name: 'unit_conversion', arguments: [1] });
    expect(fast.body.error).toBeDefined();
    expect(fast).toEqual(sdk);
  });

  it("keeps the SDK client's default flow", async () => {
    const client = await connect(agent.url);
    const result = await client.callTool({ name: 'unit_conversion', arguments: { metres: 1 } });
    expect(result.structuredContent).toEqual({ feet: 3.28 });
    await client.close();
  });
});
