// `npm run bench`: every benchmark, printed as Markdown tables with ratios against baselines of the same run.
// `npm run bench -- --duration 10` for longer runs; `--only http` for one section.
import { parseArgs } from 'node:util';
import { loadGenerator } from './_harness.js';
import { benchAuth } from './auth.js';
import { benchFaces } from './faces.js';
import { benchGrowth } from './growth.js';
import { benchHttp } from './http.js';
import { benchMcp } from './mcp.js';
import { benchPeers } from './peers.js';
import { benchSandbox } from './sandbox.js';
import { benchCluster } from './cluster.js';
import { benchHub } from './hub.js';
import { benchRooms } from './rooms.js';
import { benchStreaming } from './streaming.js';

const { values } = parseArgs({ options: { duration: { type: 'string', default: '5' }, only: { type: 'string' } } });
const duration = Number(values.duration);
const log = (line: string) => process.stderr.write(`${line}\n`);

const sections: [string, () => Promise<string>][] = [
  [
    'http',
    async () =>
      `## HTTP hot path (50 connections, load from ${loadGenerator()})\n\n${(await benchHttp(duration, log)).markdown}`,
  ],
  [
    'auth',
    async () =>
      `## The guard's token check per request, in process: none, static, JWT (${duration} s each)\n\n${await benchAuth(duration, log)}`,
  ],
  [
    'sandbox',
    async () =>
      `## Generated routines: QuickJS sandbox vs hand-written (${duration} s per server, 50 connections, load from ${loadGenerator()})\n\n${(await benchSandbox(duration, log)).markdown}`,
  ],
  [
    'streaming',
    async () =>
      `## Streaming (SSE): first-delta latency, and streamed vs non-streamed replies (${duration} s, load from ${loadGenerator()})\n\n${await benchStreaming(duration, log)}`,
  ],
  [
    'faces',
    async () =>
      `## Faces: ROAR and A2A vs Agora (50 connections, load from ${loadGenerator()})\n\n${await benchFaces(duration, log)}`,
  ],
  [
    'peers',
    async () =>
      `## Peer clients: ROAR, A2A and OAP calls against a plain Agora Sender call (one at a time, one agent serving all four)\n\n${await benchPeers(Math.max(100, duration * 60), log)}`,
  ],
  [
    'mcp',
    async () =>
      `## MCP: tools/call vs Agora POST / (50 connections, load from ${loadGenerator()})\n\n${await benchMcp(duration, log)}`,
  ],
  [
    'rooms',
    async () =>
      `## Rooms: turns through the hub vs direct Agora turns, and live fan-out to 100 watchers\n\n${await benchRooms(log)}`,
  ],
  [
    'growth',
    async () =>
      `## Growth: protocols/ from 10 to 50,000 documents, the conversation cap at 200,000 live, expiry of 500,000\n\n${await benchGrowth(log)}`,
  ],
  [
    'hub',
    async () => `## Hub: keyword routing and directory search, 10,000 agents against 100\n\n${await benchHub(log)}`,
  ],
];
const extra = await import('./scale.js').then(
  (module: { sections?: (duration: number, log: (line: string) => void) => [string, () => Promise<string>][] }) =>
    module.sections?.(duration, log) ?? [],
  () => [],
);
sections.push(...extra);
sections.push(...(await import('./every-core.js')).sections(duration, log));
sections.push(['cluster', () => benchCluster(duration, log)]);

for (const [name, run] of sections) {
  if (values.only && values.only !== name) continue;
  log(`bench: ${name}`);
  process.stdout.write(`${await run()}\n\n`);
}
