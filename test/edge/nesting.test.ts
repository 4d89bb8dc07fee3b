// The nesting cap of `POST /` (100 levels) holds on every surface the edge serves: a 100,000-deep body never reaches
// a face, a routine or the hub (where a walk of it, JSON.stringify's included, overflows the stack), and each surface
// refuses it in its own shape.
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startHub } from '../../src/hub/server.js';
import { fakeReceiver, makeFaces, PROTOCOL_HASH, serveFaces } from '../faces/_helpers.js';
import { watchedLogger } from '../helpers/watched-logger.js';

const DEPTH = 100_000;
const DEEP = `${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`;
const REFUSAL = 'Request body is nested deeper than 100 levels';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body,
  });

describe('the nesting cap on every face', () => {
  async function agent() {
    const watched = watchedLogger();
    const receiver = fakeReceiver();
    const served = await serveFaces(makeFaces({ logger: watched.logger }, receiver));
    closers.push(() => served.close());
    return { url: served.url, receiver, errors: () => watched.lines.filter((line) => line.startsWith('error')) };
  }

  it("refuses a 100,000-deep body on /mcp, /a2a, /invoke, /roar/message and POST / in each wire's shape, logs nothing, and answers on", async () => {
    const { url, receiver, errors } = await agent();
    const mcp = await post(
      `${url}/mcp`,
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"unit_conversion","arguments":{"value":${DEEP},"from":"km","to":"m"}}}`,
    );
    // As the MCP SDK's transport answers a body it cannot take as a JSON-RPC message: HTTP 400, -32700, id null.
    expect([mcp.status, await mcp.json()]).toEqual([
      400,
      { jsonrpc: '2.0', error: { code: -32700, message: `Parse error: ${REFUSAL}` }, id: null },
    ]);
    const a2a = await post(
      `${url}/a2a`,
      `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"data","data":{"x":${DEEP}}}]}}}`,
    );
    expect([a2a.status, await a2a.json()]).toEqual([
      400,
      { jsonrpc: '2.0', id: null, error: { code: -32600, message: REFUSAL } },
    ]);
    const oap = await post(
      `${url}/invoke`,
      `{"goal":"convert","memory":{"agora":{"protocolHash":"${PROTOCOL_HASH}","body":${DEEP}}},"steps_taken":[]}`,
    );
    expect([oap.status, await oap.json()]).toEqual([400, { error: 'invalid_envelope', detail: REFUSAL }]);
    const roar = await post(
      `${url}/roar/message`,
      `{"roar":"1.0","id":"m1","from":{"did":"did:roar:agent:x"},"to":{"did":"did:roar:agent:y"},"intent":"delegate","payload":{"task":${DEEP}}}`,
    );
    expect([roar.status, await roar.json()]).toEqual([400, { error: 'invalid_message', message: REFUSAL }]);
    const agora = await post(url, `{"body":${DEEP}}`);
    expect([agora.status, await agora.json()]).toEqual([400, { status: 'failure', error: REFUSAL }]);
    expect(receiver.queries).toEqual([]);
    expect(errors()).toEqual([]);
    // Still answering, on each face.
    const list = await post(`${url}/mcp`, '{"jsonrpc":"2.0","id":2,"method":"tools/list"}');
    expect(list.status).toBe(200);
    const invoke = await post(
      `${url}/invoke`,
      `{"goal":"convert","memory":{"agora":{"protocolHash":"${PROTOCOL_HASH}","body":{"value":1}}},"steps_taken":[]}`,
    );
    expect(((await invoke.json()) as { memory: { last_result: unknown } }).memory.last_result).toEqual({
      converted: true,
      input: { value: 1 },
    });
    expect((await fetch(`${url}/roar/health`)).status).toBe(200);
  });

  it("refuses a 100,000-deep frame on /roar/ws with ROAR's error frame, and answers the next message on the same socket", async () => {
    const { url, errors } = await agent();
    const socket = new WebSocket(`${url.replace('http', 'ws')}/roar/ws`);
    closers.push(async () => socket.close());
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    const next = () =>
      new Promise<Record<string, unknown>>((resolve) =>
        socket.once('message', (data) => resolve(JSON.parse(String(data)) as Record<string, unknown>)),
      );
    const refused = next();
    socket.send(
      `{"roar":"1.0","id":"m1","from":{"did":"did:roar:agent:x"},"to":{"did":"did:roar:agent:y"},"intent":"delegate","payload":{"task":${DEEP}}}`,
    );
    expect(await refused).toEqual({
      type: 'error',
      error: 'invalid_message',
      message: 'Message is nested deeper than 100 levels',
    });
    // The socket is still open, and the face still answers (here: a message to another DID, refused by the face itself).
    const answered = next();
    socket.send(
      '{"roar":"1.0","id":"m2","from":{"did":"did:roar:agent:x"},"to":{"did":"did:roar:agent:y"},"intent":"delegate","payload":{"task":"hi"}}',
    );
    expect(await answered).toMatchObject({
      type: 'error',
      error: 'invalid_message',
      message: expect.stringMatching(/^to\.did did:roar:agent:y is not this agent/),
    });
    expect(errors()).toEqual([]);
  });
});

describe("the nesting cap on the hub's routes", () => {
  it("refuses a 100,000-deep body on POST /agents, POST /protocols, PUT /runs/:id (and a 20,000-deep one under the rooms' 64 KiB cap) with 400, logs nothing, and answers on", async () => {
    const watched = watchedLogger();
    const hub = await startHub({ port: 0, tickMs: 0, logger: watched.logger });
    closers.push(() => hub.close());
    const put = (path: string, body: string) =>
      fetch(`${hub.url}${path}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body });
    const answers = [
      await post(`${hub.url}/agents`, `{"url":"http://127.0.0.1:9","x":${DEEP}}`),
      await post(`${hub.url}/protocols`, `{"hash":"h","text":${DEEP}}`),
      await put('/runs/r1', `{"run":{"id":"r1","hops":${DEEP}}}`),
      await post(`${hub.url}/rooms`, `{"topic":"t","participants":${'['.repeat(20_000)}${']'.repeat(20_000)}}`),
    ];
    expect(answers.map((response) => response.status)).toEqual([400, 400, 400, 400]);
    for (const response of answers) expect(JSON.stringify(await response.json())).toContain(REFUSAL);
    expect(watched.lines.filter((line) => line.startsWith('error'))).toEqual([]);
    expect((await fetch(`${hub.url}/health`)).status).toBe(200);
  });
});
