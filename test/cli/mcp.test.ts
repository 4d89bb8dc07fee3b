// `agora mcp <agent-url>` as an MCP host runs it: the SDK's own Client starts the command over stdio.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent.js';
import { silentLogger } from '../../src/log.js';
import { FakeAnthropic, modelForFake } from '../../src/testing/index.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';
import { cliArgs } from '../helpers/cli.js';
import { COUNTER_PD, COUNTER_ROUTINE, UNITS_PD, UNITS_ROUTINE } from '../faces/mcp/_fixtures.js';

const TOKEN = 'stdio-secret';

async function startHost(url: string, token: string, args: string[] = []): Promise<Client> {
  const client = new Client({ name: 'agora-test-host', version: '1.0.0' });
  const env = { ...process.env, AGORA_TOKEN: token } as Record<string, string>;
  await client.connect(new StdioClientTransport({ command: process.execPath, args: cliArgs(['mcp', url, ...args]), env, stderr: 'pipe' }));
  return client;
}

function textOf(result: Record<string, unknown>): string {
  return (result.content as { text: string }[])[0]!.text;
}

describe('agora mcp (stdio)', () => {
  let folder: Awaited<ReturnType<typeof makeAgentFolder>>;
  let fake: FakeAnthropic;
  let agent: RunningAgent;
  let client: Client;

  beforeAll(async () => {
    folder = await makeAgentFolder({ 'protocols/units.md': UNITS_PD, 'routines/units.ts': UNITS_ROUTINE, 'protocols/counter.md': COUNTER_PD, 'routines/counter.ts': COUNTER_ROUTINE });
    fake = await FakeAnthropic.start({ replies: ['Bonjour from the agent.'] });
    agent = await startAgent({ dir: folder.dir, port: 0, host: '127.0.0.1', llm: modelForFake(fake), logger: silentLogger, tokens: [TOKEN], dashboard: false, routineThreshold: 0, watch: false });
    client = await startHost(agent.url, TOKEN);
  }, 60_000);

  afterAll(async () => {
    await client?.close();
    await agent?.close();
    await fake?.close();
    await folder?.cleanup();
  });

  it('lists the tools of a remote agent', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['ask', 'counter', 'unit_conversion']);
    expect(tools.find((tool) => tool.name === 'unit_conversion')!.description).toContain('Converts metres to feet.');
  });

  it('calls a protocol tool answered by its routine, with no LLM request', async () => {
    const before = fake.requests.length;
    const result = await client.callTool({ name: 'unit_conversion', arguments: { body: { metres: 2 } } });
    expect(JSON.parse(textOf(result))).toEqual({ feet: 6.56 });
    expect(fake.requests.length).toBe(before);
  });

  it('calls ask, answered by the LLM', async () => {
    const result = await client.callTool({ name: 'ask', arguments: { question: 'Say hello in French' } });
    expect(textOf(result)).toBe('Bonjour from the agent.');
  });

  it('keeps a multiround protocol in one conversation for the process', async () => {
    const count = async (add: number) => JSON.parse(textOf(await client.callTool({ name: 'counter', arguments: { body: { add } } }))).count as number;
    expect(await count(4)).toBe(4);
    expect(await count(5)).toBe(9);
  });

  it('tells the host when the agent lists a new protocol (list_changed), read every --poll seconds', async () => {
    const watched = await makeAgentFolder({ 'protocols/units.md': UNITS_PD, 'routines/units.ts': UNITS_ROUTINE });
    const live = await startAgent({ dir: watched.dir, port: 0, host: '127.0.0.1', llm: modelForFake(fake), logger: silentLogger, dashboard: false, watch: true });
    const host = await startHost(live.url, '', ['--poll', '0.2']);
    try {
      const changed = new Promise<void>((resolve) => host.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()));
      expect((await host.listTools()).tools.map((tool) => tool.name).sort()).toEqual(['ask', 'unit_conversion']);
      await watched.write('protocols/greeting.md', '---\nname: Greeting\ndescription: Says hello.\nmultiround: false\n---\nSend a name.\n');
      await changed;
      expect((await host.listTools()).tools.map((tool) => tool.name).sort()).toEqual(['ask', 'greeting', 'unit_conversion']);
    } finally {
      await host.close();
      await live.close();
      await watched.cleanup();
    }
  }, 60_000);

  it('reports a refused token as a tool error', async () => {
    const refused = await startHost(agent.url, 'wrong-token');
    const result = await refused.callTool({ name: 'unit_conversion', arguments: { body: { metres: 1 } } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/HTTP 401: Unauthorized/);
    await refused.close();
  }, 60_000);
});
