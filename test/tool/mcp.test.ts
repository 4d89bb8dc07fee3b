// MCP servers as an agent's tools (`mcp.json`): a stdio server and an HTTP one, both written with the SDK; the LLM
// (fake) calls one through tool use, a routine calls the other; a crashed server is started again, a hung one times out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import type { JsonValue } from '../../src/schemas.js';
import { startTestAgent, type TestAgent } from '../../src/testing/index.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';
import { MCP_SERVERS_FILE, startHttpMcpServer } from '../helpers/mcp-servers.js';

const CALL_PD =
  '---\nname: Call\ndescription: Calls one of the agent tools.\nmultiround: false\n---\nSend {"tool": string, "input": object}; the reply is {"result": any} or {"error": string}.\n';
const CALL_ROUTINE = `export default async function (body: { tool: string; input: unknown }, context: any) {
  try {
    return { result: await context.tools[body.tool](body.input) };
  } catch (error) {
    return { error: String(error instanceof Error ? error.message : error) };
  }
}
`;

describe('MCP servers as tools (mcp.json)', () => {
  let folder: Awaited<ReturnType<typeof makeAgentFolder>>;
  let web: Awaited<ReturnType<typeof startHttpMcpServer>>;
  let agent: TestAgent;

  const call = async (tool: string, input: JsonValue = {}) => {
    const reply = await agent.query({ tool, input }, { protocol: CALL_PD });
    if (reply.status !== 'success') throw new Error(`query failed: ${reply.error}`);
    return reply.body as { result?: unknown; error?: string };
  };

  beforeAll(async () => {
    web = await startHttpMcpServer();
    const mcpServers = {
      calc: {
        command: process.execPath,
        args: ['--import', import.meta.resolve('tsx'), MCP_SERVERS_FILE, 'stdio'],
        timeout: 2,
        maxResultChars: 50_000,
        // Started again at once after a crash (the wait that grows at each death in a row: mcp-bounds.test.ts).
        restartDelay: 0,
      },
      web: { url: web.url },
      broken: { command: `${MCP_SERVERS_FILE}.does-not-exist` },
    };
    folder = await makeAgentFolder({
      'mcp.json': JSON.stringify({ mcpServers }),
      'protocols/call.md': CALL_PD,
      'routines/call.ts': CALL_ROUTINE,
    });
    agent = await startTestAgent({ dir: folder.dir, logger: silentLogger, fake: { replies: [] } });
  }, 60_000);

  afterAll(async () => {
    await agent?.close();
    await web?.close();
    await folder?.cleanup();
  });

  it('starts no server when the agent loads', () => {
    expect(agent.receiver.mcpServers().map((server) => [server.name, server.state])).toEqual([
      ['calc', 'idle'],
      ['web', 'idle'],
      ['broken', 'idle'],
    ]);
    expect(agent.receiver.tools).toEqual([]);
  });

  it('starts only the server a routine calls, on its first call', async () => {
    expect(await call('calc_add', { a: 2, b: 3 })).toEqual({ result: { sum: 5 } });
    expect(agent.receiver.mcpServers().map((server) => [server.name, server.state])).toEqual([
      ['calc', 'running'],
      ['web', 'idle'],
      ['broken', 'idle'],
    ]);
  });

  it('starts every server before the LLM is offered the tools, and adds their tools, typed from the server schema', async () => {
    agent.fake.push('Nothing to do.');
    expect(await agent.query('Say nothing')).toEqual({ status: 'success', body: 'Nothing to do.' });
    const offered = (agent.fake.requests.at(-1)!.body as { tools?: { name: string }[] }).tools
      ?.map((tool) => tool.name)
      .sort();
    expect(offered).toEqual(['calc_add', 'calc_big', 'calc_crash', 'calc_hang', 'calc_pid', 'web_shout']);
    expect(agent.receiver.mcpServers().find((server) => server.name === 'calc')).toMatchObject({
      state: 'running',
      tools: 5,
    });
    const names = agent.receiver.tools.map((tool) => tool.name).sort();
    expect(names).toEqual(['calc_add', 'calc_big', 'calc_crash', 'calc_hang', 'calc_pid', 'web_shout']);
    const add = agent.receiver.tools.find((tool) => tool.name === 'calc_add')!;
    expect(add.input.safeParse({ a: 1, b: 2 }).success).toBe(true);
    expect(add.input.safeParse({ a: 'one', b: 2 }).success).toBe(false);
  });

  it('lets the LLM call an HTTP server tool through tool use', async () => {
    agent.fake.push({ toolUse: [{ name: 'web_shout', input: { text: 'hello' }, id: 'toolu_1' }] }, 'It says HELLO.');
    const before = web.calls;
    const reply = await agent.query('Shout hello');
    expect(reply).toEqual({ status: 'success', body: 'It says HELLO.' });
    expect(web.calls).toBe(before + 1);
    const toolResult = JSON.stringify(agent.fake.requests.at(-1)!.body.messages);
    expect(toolResult).toContain('HELLO');
  });

  it('starts a crashed server again on the next call', async () => {
    const first = (await call('calc_pid')).result;
    expect((await call('calc_crash')).error).toMatch(/calc/);
    const second = (await call('calc_pid')).result;
    expect(second).toMatch(/^\d+$/);
    expect(second).not.toBe(first);
    expect(agent.receiver.mcpServers().find((server) => server.name === 'calc')).toMatchObject({
      state: 'running',
      restarts: 1,
    });
  });

  it('times out a hung call with a clear error, and the server still answers', async () => {
    expect((await call('calc_hang')).error).toBe('MCP server "calc": tool "hang" did not answer within 2000 ms');
    expect(await call('calc_add', { a: 1, b: 1 })).toEqual({ result: { sum: 2 } });
  });

  it('refuses a result over the cap', async () => {
    expect((await call('calc_big')).error).toMatch(/result of 200000 characters is over the cap of 50000/);
  });

  it('reports a server that fails to start without failing the agent, and says so to a routine that calls it', async () => {
    expect(agent.receiver.mcpServers().find((server) => server.name === 'broken')).toMatchObject({
      state: 'failed',
      tools: 0,
      error: expect.any(String),
    });
    expect((await call('broken_anything')).error).toMatch(/^MCP server "broken" did not start: /);
  });
});
