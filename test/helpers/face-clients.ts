// The peers' clients in their default flows, each driving the counter protocol (counter-agent.ts) for a few turns of one
// conversation: @a2a-js/sdk's client, @modelcontextprotocol/sdk's client, and ROAR's SDK client written as the facts of
// roar_sdk 0.3.2 (client.py): it picks `context.session_id` itself and sends it with every message; over the WebSocket
// its `ws_send` sends one message and reads exactly one frame as the reply ROARMessage.
import { randomUUID } from 'node:crypto';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import WebSocket from 'ws';
import { pythonMessage } from '../bindings/roar/_messages.js';
import { COUNTER_HASH, type CounterReply } from './counter-agent.js';

/** How a driver reaches the agent: its URL, the token when the agent asks for one, and the `fetch` its SDK uses. */
export type ClientOptions = { token?: string; fetch?: typeof fetch };

/** A conversation's answers as one client saw them: each turn's count and the process that answered, and the id it kept. */
export type Turns = { counts: number[]; pids: number[]; ids: string[] };

const authorization = (token: string | undefined): Record<string, string> =>
  token ? { authorization: `Bearer ${token}` } : {};

function withHeaders(base: typeof fetch, headers: Record<string, string>): typeof fetch {
  return (input, init) => {
    const merged = new Headers(init?.headers);
    for (const [name, value] of Object.entries(headers)) merged.set(name, value);
    return base(input, { ...init, headers: merged });
  };
}

function record(turns: Turns, reply: CounterReply, id: string): void {
  turns.counts.push(reply.count);
  turns.pids.push(reply.pid);
  turns.ids.push(id);
}

/**
 * @a2a-js/sdk's client, its default flow: the first `SendMessage` without `contextId` (or with the client's own, when
 * `contextId` is given), then each next one with the `contextId` of the task returned.
 */
export async function a2aTurns(
  url: string,
  count: number,
  options: ClientOptions & { contextId?: string; stream?: boolean } = {},
): Promise<Turns> {
  const fetchImpl = withHeaders(options.fetch ?? fetch, authorization(options.token));
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
    }),
  );
  const client = await factory.createFromUrl(url);
  const turns: Turns = { counts: [], pids: [], ids: [] };
  let contextId = options.contextId;
  for (let index = 0; index < count; index++) {
    const message = {
      messageId: randomUUID(),
      role: 1,
      ...(contextId !== undefined ? { contextId } : {}),
      parts: [{ content: { $case: 'data', value: { protocolHash: COUNTER_HASH, body: { add: 1 } } } }],
    };
    let task: any;
    if (options.stream) {
      let artifact: any;
      for await (const event of client.sendMessageStream({ message } as never) as AsyncIterable<any>) {
        if (event.payload?.$case === 'task') task = event.payload.value;
        if (event.payload?.$case === 'artifactUpdate') artifact = event.payload.value.artifact;
      }
      task = { ...task, artifacts: [artifact] };
    } else task = await client.sendMessage({ message } as never);
    const value = task.artifacts?.[0]?.parts?.[0]?.content?.value;
    if (typeof value?.count !== 'number') throw new Error(`A2A: no count in ${JSON.stringify(task)}`);
    contextId = task.contextId as string;
    record(turns, value as CounterReply, contextId);
  }
  return turns;
}

/** @modelcontextprotocol/sdk's client over Streamable HTTP: one session, the counter tool called `count` times. */
export async function mcpTurns(url: string, count: number, options: ClientOptions = {}): Promise<Turns> {
  const client = new McpClient({ name: 'multi-turn-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: authorization(options.token) },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    const tool = tools.find((candidate) => candidate.name.toLowerCase().includes('counter'));
    if (tool === undefined)
      throw new Error(`MCP: no counter tool in ${tools.map((candidate) => candidate.name).join(', ')}`);
    // A tool takes the protocol's fields, or its whole body as `body` when the document names no fields.
    const wrapped = (tool.inputSchema.properties as Record<string, unknown> | undefined)?.body !== undefined;
    const turns: Turns = { counts: [], pids: [], ids: [] };
    for (let index = 0; index < count; index++) {
      const result = (await client.callTool({
        name: tool.name,
        arguments: wrapped ? { body: { add: 1 } } : { add: 1 },
      })) as { content: { text: string }[]; isError?: boolean };
      if (result.isError) throw new Error(`MCP: ${result.content[0]?.text}`);
      record(turns, JSON.parse(result.content[0]!.text) as CounterReply, transport.sessionId ?? '');
    }
    await transport.terminateSession();
    return turns;
  } finally {
    await client.close();
  }
}

/** The agent's ROAR DID, from its card. */
export async function roarDid(url: string): Promise<string> {
  const card = (await (await fetch(`${url}/roar/card`)).json()) as { identity: { did: string } };
  return card.identity.did;
}

type RoarReply = {
  payload: { status: string; result?: CounterReply; error?: string; message?: string };
  context: { session_id?: string };
};

function counted(reply: RoarReply, turns: Turns): void {
  if (reply.payload.status !== 'ok' || reply.payload.result === undefined)
    throw new Error(`ROAR: ${JSON.stringify(reply.payload)}`);
  record(turns, reply.payload.result, reply.context.session_id ?? '');
}

/** ROAR's SDK client over HTTP (`POST /roar/message`), its own `context.session_id` on every message. */
export async function roarHttpTurns(
  url: string,
  count: number,
  sessionId: string,
  options: ClientOptions = {},
): Promise<Turns> {
  const did = await roarDid(url);
  const turns: Turns = { counts: [], pids: [], ids: [] };
  for (let index = 0; index < count; index++) {
    const text = pythonMessage(
      did,
      { protocolHash: COUNTER_HASH, body: { add: 1 } },
      { now: Date.now(), context: { session_id: sessionId } },
    );
    const response = await (options.fetch ?? fetch)(`${url}/roar/message`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...authorization(options.token) },
      body: text,
    });
    counted((await response.json()) as RoarReply, turns);
  }
  return turns;
}

/**
 * ROAR's SDK client over the WebSocket as its `ws_send` works: for each message a socket is opened, the message sent,
 * and exactly one frame read as the reply ROARMessage (a socket per message also lets `--workers` take turns).
 */
export async function roarSocketTurns(
  url: string,
  count: number,
  sessionId: string,
  options: ClientOptions = {},
): Promise<Turns> {
  const did = await roarDid(url);
  const turns: Turns = { counts: [], pids: [], ids: [] };
  for (let index = 0; index < count; index++) {
    const socket = new WebSocket(`${url.replace(/^http/, 'ws')}/roar/ws`, { headers: authorization(options.token) });
    const frame = await new Promise<string>((resolve, reject) => {
      socket.once('error', reject);
      socket.once('message', (data) => resolve(String(data)));
      socket.once('open', () =>
        socket.send(
          pythonMessage(
            did,
            { protocolHash: COUNTER_HASH, body: { add: 1 } },
            { now: Date.now(), context: { session_id: sessionId } },
          ),
        ),
      );
    });
    socket.close();
    counted(JSON.parse(frame) as RoarReply, turns);
  }
  return turns;
}
