import { ClientFactory } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createA2aRpc } from '../../../src/bindings/a2a/jsonrpc.js';
import { fakeReceiver, makeFaces, PROTOCOL_HASH, serveFaces } from '../../faces/_helpers.js';

describe("A2A face, with @a2a-js/sdk's own client on loopback", () => {
  const receiver = fakeReceiver();
  const faces = makeFaces({}, receiver);
  let served: Awaited<ReturnType<typeof serveFaces>>;
  beforeAll(async () => {
    served = await serveFaces(faces);
  });
  afterAll(async () => served.close());

  const rpc = async (body: unknown) =>
    (await fetch(`${served.url}/a2a`, { method: 'POST', body: JSON.stringify(body) })).json() as Promise<{
      result?: Record<string, unknown>;
      error?: { code: number };
    }>;

  it('serves a 1.0 card the client reads (1.0 first, then 0.3 at the same endpoint), one skill per protocol, streaming on', async () => {
    const response = await fetch(`${served.url}/.well-known/agent-card.json`);
    expect(response.headers.get('cache-control')).toContain('max-age');
    const card = (await response.json()) as Record<string, any>;
    expect(card.supportedInterfaces).toEqual([
      { url: `${served.url}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: `${served.url}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ]);
    expect(card.capabilities.streaming).toBe(true);
    expect(card.skills[0]).toMatchObject({ id: PROTOCOL_HASH, name: 'Unit conversion' });
  });

  it('sends text (natural language) and data {protocolHash, body} (a protocol query), gets the task back', async () => {
    const client = await new ClientFactory().createFromUrl(served.url);
    const text = (await client.sendMessage({
      message: { messageId: 'm1', role: 1, parts: [{ content: { $case: 'text', value: 'hello' } }] },
    } as never)) as any;
    expect(text.status.state).toBe(3);
    expect(text.artifacts[0].parts[0].content).toEqual({ $case: 'text', value: 'turn 1: hello' });
    const data = (await client.sendMessage({
      message: {
        messageId: 'm2',
        role: 1,
        parts: [{ content: { $case: 'data', value: { protocolHash: PROTOCOL_HASH, body: { value: 1 } } } }],
      },
    } as never)) as any;
    expect(data.artifacts[0].parts[0].content.value).toEqual({ converted: true, input: { value: 1 } });
    const fetched = (await client.getTask({ id: data.id } as never)) as any;
    expect(fetched.id).toBe(data.id);
    await expect(client.cancelTask({ id: data.id } as never)).rejects.toThrow();
    await expect(client.getTask({ id: 'nope' } as never)).rejects.toThrow(/not found/i);
  });

  it('keeps a contextId as one conversation, and streams deltas joining to the answer', async () => {
    const client = await new ClientFactory().createFromUrl(served.url);
    let contextId = 'ctx-1';
    const message = (text: string) =>
      ({
        message: { messageId: text, contextId, role: 1, parts: [{ content: { $case: 'text', value: text } }] },
      }) as never;
    // Without tokens, the face issues the contextId that names the conversation.
    contextId = ((await client.sendMessage(message('one'))) as any).contextId;
    const second = (await client.sendMessage(message('two'))) as any;
    expect(second.artifacts[0].parts[0].content.value).toBe('turn 2: two');
    let streamed = '';
    let final: any;
    const kinds: string[] = [];
    for await (const event of client.sendMessageStream(message('three')) as AsyncIterable<any>) {
      const { $case, value } = event.payload;
      kinds.push($case);
      if ($case === 'artifactUpdate') streamed += value.artifact.parts[0].content.value;
      if ($case === 'statusUpdate') final = value;
    }
    expect(kinds).toEqual(['task', 'artifactUpdate', 'statusUpdate']);
    expect(streamed).toBe('turn 3: three');
    expect(final.status.state).toBe(3);
  });

  it('answers the 0.3 method names in 0.3 shapes, and JSON-RPC errors with A2A codes', async () => {
    const legacy = await rpc({
      jsonrpc: '2.0',
      id: 7,
      method: 'message/send',
      params: { message: { kind: 'message', messageId: 'x', role: 'user', parts: [{ kind: 'text', text: 'old' }] } },
    });
    expect(legacy.result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    expect((await rpc({ jsonrpc: '2.0', id: 1, method: 'nope' })).error?.code).toBe(-32601);
    expect((await rpc([{ jsonrpc: '2.0', id: 1, method: 'GetTask' }])).error?.code).toBe(-32600);
    expect(
      (await rpc({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { parts: [] } } })).error?.code,
    ).toBe(-32602);
    expect(
      (
        await rpc({
          jsonrpc: '2.0',
          id: 1,
          method: 'SendMessage',
          params: { message: { parts: [{ url: 'http://x' }] } },
        })
      ).error?.code,
    ).toBe(-32005);
    expect((await rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'missing' } })).error?.code).toBe(
      -32001,
    );
    const parse = (await (await fetch(`${served.url}/a2a`, { method: 'POST', body: '{' })).json()) as {
      error: { code: number };
    };
    expect(parse.error.code).toBe(-32700);
    const failed = await rpc({
      jsonrpc: '2.0',
      id: 2,
      method: 'SendMessage',
      params: { message: { parts: [{ data: { protocolHash: 'bad', body: 1 } }] } },
    });
    expect((failed.result as any).task.status.state).toBe('TASK_STATE_FAILED');
  });
});

describe('A2A tasks kept for tasks/get', () => {
  it('keeps at most maxTaskBytes of their messages, forgetting the oldest first, and never one larger than that', async () => {
    const rpc = createA2aRpc({
      stream: async function* (question) {
        yield { type: 'done', reply: { status: 'success', body: `echo: ${String(question.body).length}` } };
      },
      maxBodyBytes: 1024 * 1024,
      logger: { error() {} },
      now: Date.now,
      maxTaskBytes: 10_000,
    });
    const call = async (body: unknown) =>
      JSON.parse(
        (await rpc({ method: 'POST', path: '/a2a', headers: {}, body: Buffer.from(JSON.stringify(body)) }))
          .body as string,
      ) as { result?: any; error?: { code: number } };
    const send = async (text: string) =>
      (
        await call({
          jsonrpc: '2.0',
          id: 1,
          method: 'message/send',
          params: { message: { messageId: 'm', role: 'user', parts: [{ kind: 'text', text }] } },
        })
      ).result.id as string;
    const get = async (id: string) => call({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id } });
    const first = await send('a'.repeat(4000));
    const second = await send('b'.repeat(4000));
    expect((await get(first)).result.status.state).toBe('completed');
    const third = await send('c'.repeat(4000));
    // 12 000 bytes would pass the budget: the oldest goes.
    expect((await get(first)).error?.code).toBe(-32001);
    expect((await get(second)).result.history[0].parts[0].text).toBe('b'.repeat(4000));
    expect((await get(third)).result.status.state).toBe('completed');
    // Answered, but too large to keep.
    const huge = await send('d'.repeat(20_000));
    expect((await get(huge)).error?.code).toBe(-32001);
    expect((await get(third)).result.status.state).toBe('completed');
  });
});
