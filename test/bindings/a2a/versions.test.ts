import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeReceiver, makeFaces, PROTOCOL_HASH, serveFaces } from '../../faces/_helpers.js';
import { a2aStreamResponse10, a2aStreamResult03, rpcSuccess, sseData } from '../../faces/_peer-schemas.js';

// Each A2A version served exactly as its SDK reads it: @a2a-js/sdk's own client streams (1.0, and 0.3 through its
// compat transport), and every byte it read is checked against that version's shapes, unknown fields refused.
describe('A2A face, version by version', () => {
  const faces = makeFaces({}, fakeReceiver());
  let served: Awaited<ReturnType<typeof serveFaces>>;
  beforeAll(async () => {
    served = await serveFaces(faces);
  });
  afterAll(async () => served.close());

  /** A client of @a2a-js/sdk whose fetch keeps a copy of every response body it read. */
  function recordingFactory(legacy: boolean) {
    const bodies: Promise<{ url: string; version: string | null; text: string }>[] = [];
    const fetchImpl: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      const copy = response.clone();
      bodies.push(
        copy.text().then((text) => ({ url: String(input), version: response.headers.get('a2a-version'), text })),
      );
      return response;
    };
    const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl, ...(legacy ? { legacyCompat: { enabled: true } } : {}) })],
    });
    return { factory: new ClientFactory(options), bodies };
  }

  const text = (value: string) =>
    ({ message: { messageId: `m-${value}`, role: 1, parts: [{ content: { $case: 'text', value } }] } }) as never;

  it("streams 1.0 events with no `final` (1.0's TaskStatusUpdateEvent has none), each read strictly", async () => {
    const { factory, bodies } = recordingFactory(false);
    const client = await factory.createFromUrl(served.url);
    const kinds: string[] = [];
    for await (const event of client.sendMessageStream(text('hello')) as AsyncIterable<any>)
      kinds.push(event.payload.$case);
    expect(kinds).toEqual(['task', 'artifactUpdate', 'statusUpdate']);
    const [stream] = await Promise.all(bodies);
    expect(stream!.version).toBe('1.0');
    const events = sseData(stream!.text).map((event) => rpcSuccess(a2aStreamResponse10).parse(event).result);
    expect(events).toHaveLength(3);
    expect(stream!.text).not.toContain('"final"');
    expect(events[2]).toMatchObject({ statusUpdate: { status: { state: 'TASK_STATE_COMPLETED' } } });
  });

  it('streams a whole answer (a protocol query) as one artifact holding its JSON as a data part', async () => {
    const { factory, bodies } = recordingFactory(false);
    const client = await factory.createFromUrl(served.url);
    const message = {
      message: {
        messageId: 'm-data',
        role: 1,
        parts: [{ content: { $case: 'data', value: { protocolHash: PROTOCOL_HASH, body: { value: 2 } } } }],
      },
    } as never;
    const artifacts: any[] = [];
    for await (const event of client.sendMessageStream(message) as AsyncIterable<any>)
      if (event.payload.$case === 'artifactUpdate') artifacts.push(event.payload.value);
    expect(artifacts).toHaveLength(1);
    expect(artifacts[0].artifact.parts[0].content).toEqual({
      $case: 'data',
      value: { converted: true, input: { value: 2 } },
    });
    expect(artifacts[0].lastChunk).toBe(true);
    const [stream] = await Promise.all(bodies);
    for (const event of sseData(stream!.text)) rpcSuccess(a2aStreamResponse10).parse(event);
  });

  it("streams 0.3 events, `final: true` on the last, to the SDK's 0.3 transport picked from the card's 0.3 interface", async () => {
    const card = (await (await fetch(`${served.url}/.well-known/agent-card.json`)).json()) as {
      supportedInterfaces: { protocolVersion: string }[];
    };
    expect(card.supportedInterfaces.map((entry) => entry.protocolVersion)).toEqual(['1.0', '0.3']);
    const { factory, bodies } = recordingFactory(true);
    const client = await factory.createFromAgentCard({
      ...card,
      supportedInterfaces: card.supportedInterfaces.filter((entry) => entry.protocolVersion === '0.3'),
    } as never);
    expect(client.protocolVersion).toBe('0.3');
    let streamed = '';
    let last: any;
    for await (const event of client.sendMessageStream(text('old client')) as AsyncIterable<any>) {
      if (event.payload.$case === 'artifactUpdate') streamed += event.payload.value.artifact.parts[0].content.value;
      last = event.payload;
    }
    expect(streamed).toBe('turn 1: old client');
    expect(last.$case).toBe('statusUpdate');
    const [stream] = await Promise.all(bodies);
    expect(stream!.version).toBe('0.3');
    const events = sseData(stream!.text).map((event) => rpcSuccess(a2aStreamResult03).parse(event).result);
    expect(events.map((event) => [event.kind, 'final' in event ? event.final : undefined])).toEqual([
      ['task', undefined],
      ['artifact-update', undefined],
      ['status-update', true],
    ]);
  });

  it('refuses a method of one version under an A2A-Version header naming the other', async () => {
    const call = async (method: string, version: string) => {
      const response = await fetch(`${served.url}/a2a`, {
        method: 'POST',
        headers: { 'a2a-version': version },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method,
          params: { message: { messageId: 'x', role: 'user', parts: [{ kind: 'text', text: 'x' }] } },
        }),
      });
      return {
        version: response.headers.get('a2a-version'),
        body: (await response.json()) as { result?: unknown; error?: { code: number } },
      };
    };
    expect((await call('SendMessage', '0.3')).body.error?.code).toBe(-32601);
    expect((await call('message/send', '1.0')).body.error?.code).toBe(-32601);
    const legacy = await call('message/send', '0.3');
    expect(legacy.version).toBe('0.3');
    expect(legacy.body.result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
  });
});
