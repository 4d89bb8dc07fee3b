// `agora mcp <agent-url>` as an MCP host runs it: the SDK's own Client starts the command over stdio, and is compared
// with the same SDK's Client over Streamable HTTP against the same agent's `/mcp`.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as SdkClient } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent.js';
import { silentLogger } from '../../src/log.js';
import { InMemoryMemory } from '../../src/memory/file.js';
import { FakeAnthropic, modelForFake } from '../../src/testing/index.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';
import { cliArgs } from '../helpers/cli.js';
import { connect, COUNTER_PD, COUNTER_ROUTINE, UNITS_PD, UNITS_ROUTINE } from '../bindings/mcp/_fixtures.js';

const TOKEN = 'stdio-secret';
const AGENT_FILES = {
  'protocols/units.md': UNITS_PD,
  'routines/units.ts': UNITS_ROUTINE,
  'protocols/counter.md': COUNTER_PD,
  'routines/counter.ts': COUNTER_ROUTINE,
};

/** An MCP host running `agora mcp <url> …args` over stdio, with `token` in AGORA_TOKEN (none when empty). */
async function startHost(url: string, token: string, args: string[] = []): Promise<Client> {
  const client = new SdkClient({ name: 'agora-test-host', version: '1.0.0' });
  const env = { ...process.env, AGORA_TOKEN: token } as Record<string, string>;
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: cliArgs(['mcp', url, ...args]), env, stderr: 'pipe' }),
  );
  return client;
}

function textOf(result: Record<string, unknown>): string {
  return (result.content as { text: string }[])[0]!.text;
}

async function count(client: Client, add: number): Promise<number> {
  return JSON.parse(textOf(await client.callTool({ name: 'counter', arguments: { body: { add } } }))).count as number;
}

describe('agora mcp (stdio) for an agent with an MCP face: a bridge to its /mcp', () => {
  let folder: Awaited<ReturnType<typeof makeAgentFolder>>;
  let fake: FakeAnthropic;
  let agent: RunningAgent;
  let stdio: Client;
  let http: Client;

  beforeAll(async () => {
    folder = await makeAgentFolder(AGENT_FILES);
    fake = await FakeAnthropic.start({ replies: ['Bonjour from the agent.'] });
    agent = await startAgent({
      dir: folder.dir,
      port: 0,
      host: '127.0.0.1',
      llm: modelForFake(fake),
      logger: silentLogger,
      tokens: [TOKEN],
      dashboard: false,
      routineThreshold: 0,
      watch: false,
    });
    stdio = await startHost(agent.url, TOKEN);
    http = await connect(agent.url, { authorization: `Bearer ${TOKEN}` });
  }, 60_000);

  afterAll(async () => {
    await stdio?.close();
    await http?.close();
    await agent?.close();
    await fake?.close();
    await folder?.cleanup();
  });

  it('lists exactly the tools, schemas and resources of the agent’s /mcp', async () => {
    const { tools } = await stdio.listTools();
    expect(tools).toEqual((await http.listTools()).tools);
    expect(tools.map((tool) => tool.name).sort()).toEqual(['ask', 'counter', 'unit_conversion']);
    // The routine's own fields, not one untyped `body`.
    expect(tools.find((tool) => tool.name === 'unit_conversion')!.inputSchema).toMatchObject({
      type: 'object',
      properties: { metres: { type: 'number' } },
      required: ['metres'],
    });
    expect((await stdio.listResources()).resources).toEqual((await http.listResources()).resources);
  });

  it('calls a protocol tool with its fields, answered by its routine as over HTTP, with no LLM request', async () => {
    const before = fake.requests.length;
    const result = await stdio.callTool({ name: 'unit_conversion', arguments: { metres: 2 } });
    expect(result).toEqual(await http.callTool({ name: 'unit_conversion', arguments: { metres: 2 } }));
    expect(result.structuredContent).toEqual({ feet: 6.56 });
    expect(fake.requests.length).toBe(before);
  });

  it('reads a protocol document, and refuses an unknown tool as the face does', async () => {
    const units = (await stdio.listResources()).resources.find((resource) => resource.title === 'Unit conversion')!;
    expect((await stdio.readResource({ uri: units.uri })).contents[0]).toMatchObject({ text: UNITS_PD });
    const refusal = (client: Client) =>
      client.callTool({ name: 'no_such_tool', arguments: {} }).then(
        () => undefined,
        (error: { code: number; message: string }) => ({ code: error.code, message: error.message }),
      );
    expect(await refusal(stdio)).toEqual(await refusal(http));
    expect(await refusal(stdio)).toMatchObject({
      code: -32602,
      message: expect.stringContaining('Unknown tool: no_such_tool'),
    });
  });

  it('calls ask, answered by the LLM', async () => {
    const result = await stdio.callTool({ name: 'ask', arguments: { question: 'Say hello in French' } });
    expect(textOf(result)).toBe('Bonjour from the agent.');
  });

  it('keeps a multiround protocol in one conversation of the agent’s session: 1, 2, 3 (--token)', async () => {
    const host = await startHost(agent.url, '', ['--token', TOKEN]);
    try {
      expect([await count(host, 1), await count(host, 1), await count(host, 1)]).toEqual([1, 2, 3]);
    } finally {
      await host.close();
    }
  }, 60_000);

  it('reports a refused token as a tool error that says what failed', async () => {
    const refused = await startHost(agent.url, 'wrong-token');
    try {
      const result = await refused.callTool({ name: 'unit_conversion', arguments: { metres: 1 } });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toBe(`PEER_FAILURE: agent at ${agent.url}/mcp answered 401: Unauthorized`);
      await expect(refused.listTools()).rejects.toThrow(`agent at ${agent.url}/mcp answered 401: Unauthorized`);
    } finally {
      await refused.close();
    }
  }, 60_000);
});

describe('agora mcp (stdio) across changes of the agent', () => {
  let fake: FakeAnthropic;

  beforeAll(async () => {
    fake = await FakeAnthropic.start({ replies: [] });
  });

  afterAll(async () => {
    await fake?.close();
  });

  it('counts 1, 2, 3 without a token, opens a new session when the restarted agent has forgotten it (404), and serves the generic tools once the face is gone', async () => {
    const folder = await makeAgentFolder(AGENT_FILES);
    const start = (port: number, faces?: ['agora']) =>
      startAgent({
        dir: folder.dir,
        port,
        host: '127.0.0.1',
        llm: null,
        logger: silentLogger,
        dashboard: false,
        watch: false,
        memory: new InMemoryMemory(),
        ...(faces ? { faces: { faces } } : {}),
      });
    let agent = await start(0);
    const host = await startHost(agent.url, '', ['--poll', '0']);
    try {
      expect([await count(host, 1), await count(host, 1), await count(host, 1)]).toEqual([1, 2, 3]);
      // The same address, nothing remembered: the bridge's session is unknown there, answered 404.
      const port = Number(new URL(agent.url).port);
      await agent.close();
      agent = await start(port);
      expect(await count(host, 5)).toBe(5);
      expect(await count(host, 1)).toBe(6);
      // Restarted without its MCP face: that call fails saying so, the host is told, and the generic tools answer.
      await agent.close();
      agent = await start(port, ['agora']);
      const changed = new Promise<void>((resolve) =>
        host.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
      );
      const failed = await host.callTool({ name: 'counter', arguments: { body: { add: 1 } } });
      expect(textOf(failed)).toBe(`NOT_FOUND: agent at ${agent.url}/mcp serves no MCP face (answered 404: Not found)`);
      await changed;
      expect((await host.listTools()).tools.find((tool) => tool.name === 'unit_conversion')!.inputSchema).toMatchObject(
        { required: ['body'] },
      );
      expect(await count(host, 2)).toBe(2);
    } finally {
      await host.close();
      await agent.close();
      await folder.cleanup();
    }
  }, 60_000);

  it('passes on the list_changed of an agent’s MCP face, and tells one read every --poll seconds without the face', async () => {
    // Bridged with no poll: only the agent's own notification can tell. Without the face: the poll of /wellknown.
    for (const { faces, poll } of [
      { faces: undefined, poll: '0' },
      { faces: ['agora' as const], poll: '0.2' },
    ]) {
      const watched = await makeAgentFolder({ 'protocols/units.md': UNITS_PD, 'routines/units.ts': UNITS_ROUTINE });
      // With an LLM: a protocol without a routine is listed (an agent without one lists only what its routines answer).
      const live = await startAgent({
        dir: watched.dir,
        port: 0,
        host: '127.0.0.1',
        llm: modelForFake(fake),
        logger: silentLogger,
        dashboard: false,
        watch: true,
        ...(faces ? { faces: { faces } } : {}),
      });
      const host = await startHost(live.url, '', ['--poll', poll]);
      try {
        const changed = new Promise<void>((resolve) =>
          host.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
        );
        expect((await host.listTools()).tools.map((tool) => tool.name).sort()).toEqual(['ask', 'unit_conversion']);
        await watched.write(
          'protocols/greeting.md',
          '---\nname: Greeting\ndescription: Says hello.\nmultiround: false\n---\nSend a name.\n',
        );
        await changed;
        expect((await host.listTools()).tools.map((tool) => tool.name).sort()).toEqual([
          'ask',
          'greeting',
          'unit_conversion',
        ]);
      } finally {
        await host.close();
        await live.close();
        await watched.cleanup();
      }
    }
  }, 60_000);
});

describe('agora mcp (stdio) for an agent without an MCP face', () => {
  let folder: Awaited<ReturnType<typeof makeAgentFolder>>;
  let agent: RunningAgent;
  let host: Client;

  beforeAll(async () => {
    folder = await makeAgentFolder(AGENT_FILES);
    // `--faces agora`: no /mcp (404). No LLM: natural language is refused.
    agent = await startAgent({
      dir: folder.dir,
      port: 0,
      host: '127.0.0.1',
      llm: null,
      logger: silentLogger,
      dashboard: false,
      watch: false,
      faces: { faces: ['agora'] },
    });
    host = await startHost(agent.url, '');
  }, 60_000);

  afterAll(async () => {
    await host?.close();
    await agent?.close();
    await folder?.cleanup();
  });

  it('offers the generic tools: each protocol’s body as `body`, and ask', async () => {
    const { tools } = await host.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['ask', 'counter', 'unit_conversion']);
    expect(tools.find((tool) => tool.name === 'unit_conversion')!.inputSchema).toMatchObject({
      type: 'object',
      required: ['body'],
    });
    const result = await host.callTool({ name: 'unit_conversion', arguments: { body: { metres: 2 } } });
    expect(JSON.parse(textOf(result))).toEqual({ feet: 6.56 });
  });

  it('keeps a multiround protocol in one conversation for the process: 1, 2, 3', async () => {
    expect([await count(host, 1), await count(host, 1), await count(host, 1)]).toEqual([1, 2, 3]);
  });

  it('says what failed when ask is refused, never "HTTP 200"', async () => {
    const result = await host.callTool({ name: 'ask', arguments: { question: 'Say hello' } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(
      `NATURAL_LANGUAGE_UNSUPPORTED: agent at ${agent.url}/ answered: This agent only accepts queries under the protocols listed at /wellknown`,
    );
  });
});

describe('agora mcp (stdio) for an agent that fails', () => {
  let server: Server;
  let url: string;
  let host: Client;

  beforeAll(async () => {
    // Answers every request 503, as a full MCP face does (`Too many open MCP sessions`), with a control character.
    server = createServer((_request, response) => {
      response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '60' });
      response.end(
        JSON.stringify({
          jsonrpc: '2.0',
          error: { code: -32000, message: 'Too busy\u001b[2J: retry later' },
          id: null,
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    host = await startHost(url, '');
  }, 60_000);

  afterAll(async () => {
    await host?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('says which agent answered what, sanitised, in a tool error and in a listing’s error', async () => {
    const result = await host.callTool({ name: 'anything', arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe(`PEER_FAILURE: agent at ${url}/mcp answered 503: Too busy [2J: retry later`);
    await expect(host.listTools()).rejects.toThrow(`agent at ${url}/mcp answered 503: Too busy [2J: retry later`);
  });
});
