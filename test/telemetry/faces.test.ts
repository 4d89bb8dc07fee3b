// A client's trace context crosses into the agent on every face: the agent's server span is the child of the span
// that sent the request, and the turn and the routine's run are its children; spans are sent by OTLP/HTTP (JSON).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent.js';
import { askPeer } from '../../src/bindings/peers.js';
import { silentLogger } from '../../src/log.js';
import { parseDocument } from '../../src/protocol/document.js';
import { Sender } from '../../src/sender/sender.js';
import { startTracing, type RunningTracing } from '../../src/telemetry/setup.js';
import { injectContext, inSpan } from '../../src/telemetry/tracing.js';
import { mcpTurns } from '../helpers/face-clients.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';
import { COUNTER_FILES, COUNTER_HASH, COUNTER_PD } from '../helpers/counter-agent.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';

/** A fetch that sends the current trace context (`traceparent`), as OpenTelemetry's fetch instrumentation does. */
const tracingFetch: typeof fetch = (input, init) => {
  const headers: Record<string, string> = {};
  new Headers(init?.headers).forEach((value, name) => (headers[name] = value));
  injectContext(headers);
  return fetch(input, { ...init, headers });
};

const SERVER = 2;
const CLIENT = 3;

let receiver: OtlpReceiver;
let tracing: RunningTracing;
let agent: RunningAgent;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  tracing = await startTracing({
    serviceName: 'agora-test',
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
  });
  const folder = await makeAgentFolder(COUNTER_FILES);
  cleanups.push(folder.cleanup);
  agent = await startAgent({
    dir: folder.dir,
    port: 0,
    host: '127.0.0.1',
    llm: null,
    logger: silentLogger,
    watch: false,
    dashboard: false,
  });
  cleanups.push(() => agent.close());
});

afterAll(async () => {
  await tracing.stop();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await receiver.close();
});

/** The spans under `root` (itself included), by parent. */
function tree(spans: ReceivedSpan[], root: ReceivedSpan): ReceivedSpan[] {
  const found = [root];
  for (let i = 0; i < found.length; i++)
    for (const span of spans) if (span.parentSpanId === found[i]!.spanId) found.push(span);
  return found;
}

describe('traces across a face', () => {
  const protocol = parseDocument(COUNTER_PD);

  it.each([
    [
      'agora',
      (url: string) => new Sender({ logger: silentLogger }).query(url, { body: { add: 2 }, protocol: COUNTER_PD }),
    ],
    ['a2a', (url: string) => askPeer('a2a', url, { body: { add: 2 }, protocol })],
    ['roar', (url: string) => askPeer('roar', url, { body: { add: 2 }, protocol })],
    ['oap', (url: string) => askPeer('oap', url, { body: { add: 2 }, protocol })],
    // MCP's own SDK client, its fetch sending the current trace context as any instrumented fetch would.
    ['mcp', (url: string) => mcpTurns(url, 1, { fetch: tracingFetch })],
  ])('%s: the client span parents the agent server span, its turn and its routine', async (face, ask) => {
    const before = receiver.spans.length;
    await inSpan(`test ${face}`, {}, async () => void (await ask(agent.url)));
    await tracing.flush();
    const spans = receiver.spans.slice(before);
    const root = spans.find((span) => span.name === `test ${face}`);
    expect(root, `spans: ${spans.map((span) => span.name).join(', ')}`).toBeDefined();
    const under = tree(spans, root!);
    expect(under.every((span) => span.traceId === root!.traceId)).toBe(true);
    const clients = under.filter((span) => span.kind === CLIENT && span.attributes['http.request.method']);
    const servers = under.filter((span) => span.kind === SERVER);
    expect(servers.length).toBeGreaterThan(0);
    // Every server span is the child of one of the client's spans: the context crossed the wire.
    const senders = [root!, ...clients].map((span) => span.spanId);
    for (const server of servers) expect(senders).toContain(server.parentSpanId);
    const turn = under.find((span) => span.name === 'agora.turn');
    expect(turn, `spans under the client: ${under.map((span) => span.name).join(', ')}`).toMatchObject({
      attributes: { 'agora.protocol.hash': COUNTER_HASH, 'agora.protocol.name': 'Counter', 'agora.path': 'routine' },
    });
    expect(servers.map((span) => span.spanId)).toContain(turn!.parentSpanId);
    expect(under.find((span) => span.name === 'agora.routine')?.parentSpanId).toBe(turn!.spanId);
  });

  it("takes a raw client's traceparent as the parent, and names the route", async () => {
    const before = receiver.spans.length;
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parent = '00f067aa0ba902b7';
    const response = await fetch(`${agent.url}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${parent}-01` },
      body: JSON.stringify({ protocolHash: COUNTER_HASH, body: { add: 1 } }),
    });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    await tracing.flush();
    const server = receiver.spans.slice(before).find((span) => span.kind === SERVER);
    expect(server).toMatchObject({
      traceId,
      parentSpanId: parent,
      name: 'POST /',
      attributes: { 'http.route': '/', 'http.response.status_code': 200 },
    });
  });
});
