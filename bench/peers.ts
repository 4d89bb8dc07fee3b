// The peer clients' cost per call: RoarClient (HMAC-signed message, reply verified), A2aClient (@a2a-js/sdk's client)
// and OapClient (a full TaskEnvelope) against a plain Agora `Sender` call, the same routine behind each, one agent
// serving all four protocols, in the same run. One call at a time, so the figure is each client's round trip.
// Run: npm run build && tsx bench/peers.ts [--calls 500]
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { silentLogger } from '../src/log.js';
import { parseDocument } from '../src/protocol/document.js';
import { A2aClient } from '../src/bindings/a2a/client.js';
import { OapClient } from '../src/bindings/oap/client.js';
import { oapEnvelope } from '../src/bindings/oap/envelope.js';
import { RoarClient } from '../src/bindings/roar/client.js';
import { Sender } from '../src/sender/sender.js';
import { formatNumber, startProcess, table } from './_harness.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const SECRET = 'bench-secret';

type Client = { name: string; call: () => Promise<unknown> };

/** Mean µs per call of `calls` sequential calls. */
async function timeCalls(client: Client, calls: number): Promise<number> {
  const started = process.hrtime.bigint();
  for (let index = 0; index < calls; index++) await client.call();
  return Number(process.hrtime.bigint() - started) / 1000 / calls;
}

/** Runs the clients in alternating rounds; each keeps its best round (the host's speed swings), ratios against Agora's. */
export async function benchPeers(calls: number, log: (line: string) => void, rounds = 3): Promise<string> {
  const document = parseDocument(readFileSync(`${root}protocols/unit-conversion.md`), 'unit-conversion.md');
  const body = { value: 10, from: 'km', to: 'mi' };
  const server = await startProcess('bench/_servers.mjs', ['agora-faces', root], { BENCH_ROAR_SECRET: SECRET });
  try {
    const url = server.url;
    const sender = new Sender({ llm: null, hub: null, logger: silentLogger });
    const roar = new RoarClient({ secret: SECRET });
    const a2a = new A2aClient();
    const oap = new OapClient();
    const clients: Client[] = [
      { name: 'Agora Sender.query', call: () => sender.query(url, { body, protocol: document }) },
      {
        name: 'RoarClient.ask (HMAC, reply verified)',
        call: () => roar.ask(url, { body, protocolHash: document.hash }),
      },
      {
        name: 'A2aClient.send (@a2a-js/sdk)',
        call: () => a2a.send(url, { body: { protocolHash: document.hash, body } }),
      },
      {
        name: 'OapClient.invoke (TaskEnvelope)',
        call: () =>
          oap.invoke(url, oapEnvelope({ goal: 'convert', memory: { agora: { protocolHash: document.hash, body } } })),
      },
    ];
    // Each answers the routine's reply, or the bench measures nothing.
    const expected = (await sender.query(url, { body, protocol: document })).body;
    const answers = [
      (await roar.ask(url, { body, protocolHash: document.hash })).result,
      (await a2a.send(url, { body: { protocolHash: document.hash, body } })).result,
      (
        await oap.invoke(
          url,
          oapEnvelope({ goal: 'convert', memory: { agora: { protocolHash: document.hash, body } } }),
        )
      ).result,
    ];
    for (const answer of answers)
      if (!isDeepStrictEqual(answer, expected))
        throw new Error(`a client answered ${JSON.stringify(answer)}, not ${JSON.stringify(expected)}`);
    for (const client of clients) await timeCalls(client, Math.min(100, calls));
    const best = clients.map(() => Infinity);
    for (let round = 0; round < rounds; round++) {
      for (const [index, client] of clients.entries()) {
        const micros = await timeCalls(client, calls);
        best[index] = Math.min(best[index]!, micros);
        log(`peers: round ${round + 1}, ${client.name}: ${formatNumber(micros)} µs per call`);
      }
    }
    const baseline = best[0]!;
    return [
      `${calls} calls one at a time per client and round, ${rounds} rounds in turns; each client's best round.`,
      '',
      table(
        ['client', 'µs per call', 'overhead vs Agora µs', 'ratio vs Agora'],
        clients.map((client, index) => [
          client.name,
          formatNumber(best[index]!),
          formatNumber(best[index]! - baseline),
          formatNumber(best[index]! / baseline, 2),
        ]),
      ),
    ].join('\n');
  } finally {
    await server.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { calls: { type: 'string', default: '500' } } });
  process.stdout.write(`${await benchPeers(Number(values.calls), (line) => process.stderr.write(`${line}\n`))}\n`);
}
