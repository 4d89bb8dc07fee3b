// The MCP face as an MCP host sees it: the SDK's own Client over Streamable HTTP against a real agent on loopback.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../../src/agent.js';
import { silentLogger } from '../../../src/log.js';
import { FakeAnthropic, modelForFake } from '../../../src/testing/index.js';
import { makeAgentFolder } from '../../helpers/agent-folder.js';
import { connect, COUNTER_PD, COUNTER_ROUTINE, UNITS_PD, UNITS_ROUTINE } from './_fixtures.js';

const TOKEN = 'mcp-secret';

describe('the MCP face over Streamable HTTP', () => {
  let folder: Awaited<ReturnType<typeof makeAgentFolder>>;
  let fake: FakeAnthropic;
  let agent: RunningAgent;
  const auth = { authorization: `Bearer ${TOKEN}` };

  beforeAll(async () => {
    folder = await makeAgentFolder({
      'protocols/units.md': UNITS_PD,
      'routines/units.ts': UNITS_ROUTINE,
      'protocols/counter.md': COUNTER_PD,
      'routines/counter.ts': COUNTER_ROUTINE,
    });
    fake = await FakeAnthropic.start({ replies: ['Paris is the capital of France.'] });
    agent = await startAgent({
      dir: folder.dir,
      port: 0,
      host: '127.0.0.1',
      llm: modelForFake(fake),
      logger: silentLogger,
      tokens: [TOKEN],
      dashboard: false,
      routineThreshold: 0,
    });
  });

  afterAll(async () => {
    await agent?.close();
    await fake?.close();
    await folder?.cleanup();
  });

  it('lists a tool per protocol, named from its document, with the routine input as its schema, and ask', async () => {
    const client = await connect(agent.url, auth);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['ask', 'counter', 'unit_conversion']);
    const units = tools.find((tool) => tool.name === 'unit_conversion')!;
    expect(units.inputSchema).toMatchObject({
      type: 'object',
      properties: { metres: { type: 'number' } },
      required: ['metres'],
    });
    expect(units.outputSchema).toMatchObject({ type: 'object', properties: { feet: { type: 'number' } } });
    expect(units.description).toContain('Converts metres to feet.');
    expect(units.description).toContain('the reply is {"feet": number}');
    // No zod input on the counter's routine: the body as the document describes it.
    expect(tools.find((tool) => tool.name === 'counter')!.inputSchema).toMatchObject({
      type: 'object',
      required: ['body'],
    });
    await client.close();
  });

  it('answers a protocol tool with its routine, structured, without asking the LLM', async () => {
    const client = await connect(agent.url, auth);
    const before = fake.requests.length;
    const result = await client.callTool({ name: 'unit_conversion', arguments: { metres: 10 } });
    expect(result.structuredContent).toEqual({ feet: 32.81 });
    expect(result.content).toEqual([{ type: 'text', text: '{"feet":32.81}' }]);
    expect(fake.requests.length).toBe(before);
    await client.close();
  });

  it('reports a body the routine refuses as a tool error, not a crash', async () => {
    const client = await connect(agent.url, auth);
    // No body: the routine throws, the LLM fallback has no reply left: the agent's failure comes back as a tool error.
    const result = await client.callTool({ name: 'counter', arguments: {} });
    expect(result.isError).toBe(true);
    expect((result.content as { text: string }[])[0]!.text).toMatch(/^[A-Z_]+: /);
    const unknown = client.callTool({ name: 'no_such_tool', arguments: {} });
    await expect(unknown).rejects.toThrow(/Unknown tool: no_such_tool/);
    await client.close();
  });

  it('answers ask with the LLM', async () => {
    const client = await connect(agent.url, auth);
    const result = await client.callTool({ name: 'ask', arguments: { question: 'What is the capital of France?' } });
    expect(result.content).toEqual([{ type: 'text', text: 'Paris is the capital of France.' }]);
    expect(JSON.stringify(fake.requests.at(-1))).toContain('What is the capital of France?');
    await client.close();
  });

  it('keeps a multiround tool in one conversation per session', async () => {
    const first = await connect(agent.url, auth);
    const second = await connect(agent.url, auth);
    const count = async (client: Client, add: number) =>
      JSON.parse(
        ((await client.callTool({ name: 'counter', arguments: { body: { add } } })).content as { text: string }[])[0]!
          .text,
      ).count as number;
    expect(await count(first, 2)).toBe(2);
    expect(await count(first, 3)).toBe(5);
    expect(await count(second, 1)).toBe(1);
    expect(await count(first, 1)).toBe(6);
    await first.close();
    await second.close();
  });

  it('serves the protocol documents as resources, by hash', async () => {
    const client = await connect(agent.url, auth);
    const { resources } = await client.listResources();
    const units = resources.find((resource) => resource.title === 'Unit conversion')!;
    expect(units.uri).toMatch(/^agora:\/\/protocols\/[0-9a-f]{40}$/);
    const read = await client.readResource({ uri: units.uri });
    expect(read.contents[0]).toMatchObject({ uri: units.uri, text: UNITS_PD });
    await expect(client.readResource({ uri: `agora://protocols/${'0'.repeat(40)}` })).rejects.toThrow(
      /Resource not found/,
    );
    await client.close();
  });

  it('notifies list_changed when a protocol file is dropped in protocols/', async () => {
    const client = await connect(agent.url, auth);
    const changed = new Promise<void>((resolve) =>
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
    );
    // The notification stream opens after initialization; a request answered means the GET went out before it.
    await client.listTools();
    await folder.write(
      'protocols/greeting.md',
      '---\nname: Greeting\ndescription: Says hello.\nmultiround: false\n---\nSend a name.\n',
    );
    await changed;
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('greeting');
    await client.close();
  });

  it('refuses a request without the token, in MCP error shape', async () => {
    await expect(connect(agent.url)).rejects.toThrow();
    const response = await fetch(`${agent.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, message: 'Unauthorized' },
    });
  });

  it('refuses a cross-site request', async () => {
    await expect(connect(agent.url, { ...auth, origin: 'https://evil.example' })).rejects.toThrow(/403|Cross-site/);
    const response = await fetch(`${agent.url}/mcp`, {
      method: 'POST',
      headers: {
        ...auth,
        origin: 'https://evil.example',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    });
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, message: 'Cross-site request refused' },
    });
  });

  it('answers an unknown session with 404 and ends a session on DELETE', async () => {
    const client = await connect(agent.url, auth);
    const transport = client.transport as StreamableHTTPClientTransport;
    const session = transport.sessionId!;
    expect(session).toMatch(/^[0-9a-f-]{36}$/);
    await transport.terminateSession();
    const headers = {
      ...auth,
      'mcp-session-id': session,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    const response = await fetch(`${agent.url}/mcp`, {
      method: 'POST',
      headers,
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: { code: -32001 } });
    await client.close();
  });
});
