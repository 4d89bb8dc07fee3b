// MCP sessions across processes: two `agora serve` processes on one Redis, an SDK client's session opened on one and
// carried on by the other (the conversation behind it included), then ended there for both.
import { execFileSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeAgentFolder } from '../../helpers/agent-folder.js';
import { startServe } from '../../helpers/cli.js';
import { ownRedisServer } from '../../helpers/redis-server.js';
import { COUNTER_PD, COUNTER_ROUTINE } from './_fixtures.js';

function hasRedisServer(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const describeRedis = hasRedisServer() ? describe : describe.skip;

async function count(client: Client, add: number): Promise<{ count: number; pid: number }> {
  const result = await client.callTool({ name: 'counter', arguments: { body: { add } } });
  return JSON.parse((result.content as { text: string }[])[0]!.text) as { count: number; pid: number };
}

describeRedis('MCP sessions on one Redis, two processes', () => {
  let redis: Awaited<ReturnType<typeof ownRedisServer>>;
  let folder: Awaited<ReturnType<typeof makeAgentFolder>>;
  let servers: Awaited<ReturnType<typeof startServe>>[] = [];

  beforeAll(async () => {
    redis = await ownRedisServer();
    folder = await makeAgentFolder({ 'protocols/counter.md': COUNTER_PD, 'routines/counter.ts': COUNTER_ROUTINE });
    const args = [folder.dir, '--port', '0', '--store', redis.url];
    const env = { ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: '', OPENAI_API_KEY: '' };
    servers = await Promise.all([startServe(args, { env }), startServe(args, { env })]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(servers.map((server) => server.stop('SIGKILL')));
    await redis?.stop();
    await folder?.cleanup();
  });

  it('answers a session opened on one process from the other, in the same conversation', async () => {
    const [a, b] = servers as [(typeof servers)[0], (typeof servers)[0]];
    const first = new Client({ name: 'host', version: '1.0.0' });
    const transportA = new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`));
    await first.connect(transportA);
    const session = transportA.sessionId!;
    const onA = await count(first, 2);
    expect(onA.count).toBe(2);

    // The same session, carried on by the other process (the SDK skips initialize when it resumes a session id).
    const second = new Client({ name: 'host', version: '1.0.0' });
    const transportB = new StreamableHTTPClientTransport(new URL(`${b.url}/mcp`), { sessionId: session });
    await second.connect(transportB);
    const onB = await count(second, 3);
    expect(onB).toEqual({ count: 5, pid: expect.any(Number) });
    expect(onB.pid).not.toBe(onA.pid);
    expect((await count(first, 1)).count).toBe(6);

    // Ended on B, unknown on A.
    await transportB.terminateSession();
    const refused = await fetch(`${a.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': session,
      },
      body: '{"jsonrpc":"2.0","id":9,"method":"tools/list"}',
    });
    expect(refused.status).toBe(404);
    await first.close();
    await second.close();
  });
});
