// The MCP servers of `mcp.json` are peers like any other: an HTTP server's answer is capped while it is read, its
// listing capped in tools and description sizes, and a server that dies on every call waits longer at each death.
import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger, type Logger } from '../../src/log.js';
import { loadMcpTools, type McpServerConfig } from '../../src/tool/mcp/index.js';
import { MCP_SERVERS_FILE } from '../helpers/mcp-servers.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

type Tools = { tools: unknown[]; calls: string[] };

/**
 * A hostile MCP server over Streamable HTTP, by hand: it answers `initialize` and `tools/list` (with `tools`), and
 * answers every `tools/call` with `huge` bytes, written as the reader takes them; `sent` counts what left it.
 */
async function hostileServer(options: { tools: unknown[]; huge?: number }) {
  const state = { sent: 0, calls: 0 };
  const server: Server = createServer(async (request, response) => {
    if (request.method !== 'POST') return void response.writeHead(405).end();
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const message = JSON.parse(Buffer.concat(chunks).toString()) as { id?: number; method: string };
    if (message.id === undefined) return void response.writeHead(202).end();
    const reply = (result: unknown) =>
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    if (message.method === 'initialize')
      return reply({
        protocolVersion: '2025-06-18',
        capabilities: { tools: {} },
        serverInfo: { name: 'h', version: '1' },
      });
    if (message.method === 'tools/list') return reply({ tools: options.tools });
    state.calls += 1;
    // `{"jsonrpc":"2.0","id":N,"result":{"content":[{"type":"text","text":"xxxx…` without end, until the reader stops.
    response.writeHead(200, { 'content-type': 'application/json' });
    const head = `{"jsonrpc":"2.0","id":${message.id},"result":{"content":[{"type":"text","text":"`;
    response.write(head);
    state.sent += head.length;
    const piece = Buffer.alloc(64 * 1024, 'x');
    const total = options.huge ?? 200 * 1024 * 1024;
    const pump = () => {
      while (state.sent < total && !response.destroyed) {
        state.sent += piece.length;
        if (!response.write(piece)) return void response.once('drain', pump);
      }
      response.end('"}]}}');
    };
    response.on('close', () => response.destroy());
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/mcp`, state };
}

function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const keep = (line: string) => void lines.push(line);
  return { ...silentLogger, info: keep, warn: keep, error: keep, lines };
}

async function toolsOf(servers: Record<string, McpServerConfig>, logger: Logger = silentLogger) {
  const mcp = await loadMcpTools('.', logger, servers);
  closers.push(() => mcp.close());
  await mcp.ready();
  return mcp;
}

const echo = { name: 'echo', description: 'Echoes', inputSchema: { type: 'object' } };

describe('an MCP server, bounded like any peer', () => {
  it('has a 200 MB answer cut at the byte cap while it is read, never held or parsed whole', async () => {
    const hostile = await hostileServer({ tools: [echo] });
    const mcp = await toolsOf({ big: { url: hostile.url, headers: {} } });
    const tool = await mcp.toolFor('big_echo');
    const before = process.memoryUsage().rss;
    await expect(tool!.run({}, { signal: undefined } as never)).rejects.toThrow(/larger than 4194304 bytes/);
    // What left the server before the reader stopped: the cap and what the sockets held, not 200 MB.
    expect(hostile.state.sent).toBeLessThan(32 * 1024 * 1024);
    expect(process.memoryUsage().rss - before).toBeLessThan(128 * 1024 * 1024);
    // The next call is answered (cut again), the server is still used.
    await expect(tool!.run({}, { signal: undefined } as never)).rejects.toThrow(/larger than/);
    expect(hostile.state.calls).toBe(2);
  });

  it('takes its maxResponseBytes from mcp.json', async () => {
    const hostile = await hostileServer({ tools: [echo], huge: 300_000 });
    const mcp = await toolsOf({ big: { url: hostile.url, headers: {}, maxResponseBytes: 100_000 } });
    await expect((await mcp.toolFor('big_echo'))!.run({}, {} as never)).rejects.toThrow(/larger than 100000 bytes/);
  });

  it('refuses a listing of 80,000 tools at the byte cap, and keeps at most maxTools with descriptions cut', async () => {
    const many = Array.from({ length: 80_000 }, (_, index) => ({ ...echo, name: `tool${index}` }));
    const flood = await hostileServer({ tools: many });
    const logger = recordingLogger();
    const flooded = await toolsOf({ flood: { url: flood.url, headers: {} } }, logger);
    expect(flooded.tools()).toEqual([]);
    expect(logger.lines.join('\n')).toMatch(/MCP server "flood" failed: .*larger than 4194304 bytes/);

    const wordy = Array.from({ length: 1_000 }, (_, index) => ({
      ...echo,
      name: `tool${index}`,
      description: 'd'.repeat(5_000),
    }));
    const server = await hostileServer({ tools: wordy });
    const listed = await toolsOf(
      { wordy: { url: server.url, headers: {}, maxResponseBytes: 16 * 1024 * 1024 } },
      logger,
    );
    expect(listed.tools()).toHaveLength(256);
    expect(listed.tools()[0]!.description.length).toBeLessThan(2_100);
    expect(logger.lines.join('\n')).toContain('MCP server "wordy" lists 1000 tools; the first 256 are used (maxTools)');
    const few = await toolsOf({
      few: { url: server.url, headers: {}, maxResponseBytes: 16 * 1024 * 1024, maxTools: 3 },
    });
    expect(few.tools().map((tool) => tool.name)).toEqual(['few_tool0', 'few_tool1', 'few_tool2']);
  });

  it('starts a server that dies on every call again only after a wait that grows, not once per query', async () => {
    const mcp = await toolsOf({
      calc: {
        command: process.execPath,
        args: ['--import', import.meta.resolve('tsx'), MCP_SERVERS_FILE, 'stdio'],
        env: {},
        timeout: 10,
        restartDelay: 60,
      },
    });
    const crash = (await mcp.toolFor('calc_crash'))!;
    const errors: string[] = [];
    for (let query = 0; query < 20; query++)
      errors.push(
        await Promise.resolve(crash.run({}, {} as never)).then(
          () => 'answered',
          (error: Error) => error.message,
        ),
      );
    const status = mcp.status()[0]!;
    // One process in all: the first call killed it, the 19 after it were told when it starts again.
    expect(status.restarts).toBe(0);
    expect(errors.filter((error) => /started again in \d+ s/.test(error)).length).toBeGreaterThanOrEqual(18);
    expect(errors.at(-1)).toBe('MCP server "calc" died 1 time in a row; it is started again in 60 s');
  }, 30_000);
});
