// Benchmark of issue 31: an MCP `tools/call` on `POST /mcp` (JSON-RPC through the SDK's server, in a session)
// against the same query over Agora `POST /`, on the same server in the same run. Not a timed test: the ratio is
// what we track. Run: npm run build && tsx bench/mcp.ts [--duration 5] (the server runs from dist)
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { hashText } from '../src/protocol/document.js';
import {
  alternating,
  formatNumber,
  load,
  loadGenerator,
  pairedRatio,
  resultsTable,
  startProcess,
  table,
  type AlternatingResult,
} from './_harness.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const PROTOCOL_VERSION = '2025-06-18';
const ACCEPT = 'application/json, text/event-stream';

async function rpc(
  url: string,
  message: unknown,
  headers: Record<string, string> = {},
): Promise<{ session: string | null; reply: { result?: Record<string, unknown>; error?: unknown } }> {
  const response = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT, ...headers },
    body: JSON.stringify(message),
  });
  return {
    session: response.headers.get('mcp-session-id'),
    reply: (await response.json()) as { result?: Record<string, unknown> },
  };
}

/** Runs both loads and returns the Markdown table with the ratio. */
export async function benchMcp(duration: number, log: (line: string) => void, rounds = 6): Promise<string> {
  const roundSeconds = Math.max(1, Math.ceil(duration / 3));
  const hash = hashText(readFileSync(`${root}protocols/unit-conversion.md`));
  const body = { value: 10, from: 'km', to: 'mi' };
  const server = await startProcess('bench/_servers.mjs', ['agora-faces', root], {});
  try {
    const initialize = {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'bench', version: '1.0.0' } },
    };
    const { session } = await rpc(server.url, initialize);
    if (!session) throw new Error('MCP bench: initialize gave no Mcp-Session-Id');
    const headers = { 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL_VERSION, accept: ACCEPT };
    const { reply: listed } = await rpc(server.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers);
    const tools = (listed.result?.tools ?? []) as {
      name: string;
      description: string;
      inputSchema: { required?: string[] };
    }[];
    const tool = tools.find((candidate) => candidate.description.includes('(Agora protocol "Unit conversion")'));
    if (!tool) throw new Error(`MCP bench: no unit conversion tool in ${JSON.stringify(listed)}`);
    const args = tool.inputSchema.required?.includes('body') ? { body } : body;
    const call = JSON.stringify({
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: tool.name, arguments: args },
    });
    const agora = JSON.stringify({ protocolHash: hash, body });
    const { reply: checked } = await rpc(server.url, JSON.parse(call), headers);
    const direct = (await (
      await fetch(`${server.url}/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: agora })
    ).json()) as { body: unknown };
    const text = (checked.result?.content as { text: string }[] | undefined)?.[0]?.text;
    if (text !== JSON.stringify(direct.body))
      throw new Error(`MCP bench: the tool answered ${JSON.stringify(checked)}, Agora ${JSON.stringify(direct)}`);
    await load('warm-up', { url: server.url, body: agora, duration: 1 });
    await load('warm-up', { url: server.url, path: '/mcp', body: call, duration: 1, headers });
    const pid = server.child.pid;
    const [a, m] = (await alternating(
      [
        { name: 'Agora POST /, routine', url: server.url, body: agora, pid },
        {
          name: 'MCP tools/call on POST /mcp, in a session, routine',
          url: server.url,
          path: '/mcp',
          body: call,
          headers,
          pid,
        },
      ],
      rounds,
      roundSeconds,
      log,
    )) as [AlternatingResult, AlternatingResult];
    const cpu = a.cpuMicrosPerRequest && m.cpuMicrosPerRequest ? a.cpuMicrosPerRequest / m.cpuMicrosPerRequest : NaN;
    return [
      `${rounds} rounds of ${roundSeconds} s each, in turns; req/s is each one's best round.`,
      '',
      resultsTable([a, m]),
      '',
      table(
        ['ratio', 'median of rounds', 'best / best', 'by CPU time', 'target'],
        [
          [
            'MCP / Agora',
            formatNumber(pairedRatio(m, a), 2),
            formatNumber(m.requestsPerSecond / a.requestsPerSecond, 2),
            formatNumber(cpu, 2),
            '≥ 0.50',
          ],
        ],
      ),
    ].join('\n');
  } finally {
    await server.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({ options: { duration: { type: 'string', default: '5' } } });
  const duration = Number(values.duration);
  process.stdout.write(
    `## MCP: tools/call vs Agora POST / (${duration} s, 50 connections, load from ${loadGenerator()})\n\n${await benchMcp(duration, (line) => process.stderr.write(`${line}\n`))}\n`,
  );
}
