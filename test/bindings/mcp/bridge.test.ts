// The bridge of `agora mcp` to an agent's MCP face, against an MCP endpoint faked behind an injected fetch: what it
// passes on, what it bounds, how it words a failure, and how it opens a session again.
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { AgoraError } from '../../../src/errors.js';
import { failureOf, McpBridge } from '../../../src/bindings/mcp/bridge.js';

const ENDPOINT = 'http://agent.test/mcp';

type Rpc = { jsonrpc: '2.0'; id?: number; method?: string; params?: Record<string, unknown> };

/** A fake MCP face: answers `initialize` with a new session, `tools/list` with `tools`, and counts what it saw. */
function fakeFace(
  options: { tools?: unknown[]; answer?: (message: Rpc, session: string | null) => Response | undefined } = {},
) {
  const seen = { initializes: 0, deletes: 0, authorizations: [] as (string | null)[] };
  let sessions = 0;
  const answer = (async (input: string | URL | Request, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    seen.authorizations.push(headers.get('authorization'));
    if (String(input) !== ENDPOINT) return new Response('{"status":"failure","error":"Not found"}', { status: 404 });
    if (init.method === 'GET') return new Response(null, { status: 405 });
    if (init.method === 'DELETE') {
      seen.deletes += 1;
      return new Response(null, { status: 200 });
    }
    const message = JSON.parse(String(init.body)) as Rpc;
    const session = headers.get('mcp-session-id');
    const answered = options.answer?.(message, session);
    if (answered !== undefined) return answered;
    if (message.id === undefined) return new Response(null, { status: 202 });
    const reply = (result: unknown, extra: Record<string, string> = {}) =>
      new Response(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }), {
        status: 200,
        headers: { 'content-type': 'application/json', ...extra },
      });
    if (message.method === 'initialize') {
      seen.initializes += 1;
      sessions += 1;
      return reply(
        {
          protocolVersion: message.params!.protocolVersion,
          capabilities: { tools: { listChanged: true } },
          serverInfo: { name: 'fake', version: '1.0.0' },
        },
        { 'mcp-session-id': `session-${sessions}` },
      );
    }
    if (message.method === 'tools/list') return reply({ tools: options.tools ?? [] });
    if (message.method === 'tools/call') return reply({ content: [{ type: 'text', text: `in ${session}` }] });
    return new Response(
      JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } }),
      { status: 200, headers: { 'content-type': 'application/json' } },
    );
  }) as typeof fetch;
  return { fetch: answer, seen };
}

const tool = (name: string) => ({
  name,
  description: `The ${name} tool`,
  inputSchema: { type: 'object', properties: { value: { type: 'number' } }, required: ['value'] },
});

describe('the MCP bridge of agora mcp', () => {
  it('passes the tools on as listed, with the token on every request', async () => {
    const tools = [
      {
        ...tool('convert'),
        outputSchema: { type: 'object', properties: { feet: { type: 'number' } } },
        annotations: { readOnlyHint: true },
      },
    ];
    const face = fakeFace({ tools });
    const bridge = (await McpBridge.open(ENDPOINT, { fetch: face.fetch, token: 'secret' }))!;
    expect((await bridge.listTools(undefined)).tools).toEqual(tools);
    await bridge.close();
    expect(face.seen.authorizations.every((value) => value === 'Bearer secret')).toBe(true);
    // Closing ends the agent's session, and with it the session's conversations.
    expect(face.seen.deletes).toBe(1);
  });

  it('is undefined for an agent without an MCP face (404 or 405 on /mcp)', async () => {
    const face = fakeFace();
    expect(await McpBridge.open('http://agent.test/other', { fetch: face.fetch })).toBeUndefined();
    const refusing = fakeFace({
      answer: () => new Response('{"status":"failure","error":"Method not allowed"}', { status: 405 }),
    });
    expect(await McpBridge.open(ENDPOINT, { fetch: refusing.fetch })).toBeUndefined();
  });

  it('throws a refused token or a failing agent, worded, rather than taking it for no face', async () => {
    const refusing = fakeFace({
      answer: () =>
        new Response('{"jsonrpc":"2.0","error":{"code":-32000,"message":"Unauthorized"},"id":null}', {
          status: 401,
          headers: { 'content-type': 'application/json' },
        }),
    });
    await expect(McpBridge.open(ENDPOINT, { fetch: refusing.fetch })).rejects.toThrow(
      `agent at ${ENDPOINT} answered 401: Unauthorized`,
    );
    const unreachable = (async () => {
      throw Object.assign(new TypeError('fetch failed'), {
        cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
      });
    }) as typeof fetch;
    await expect(McpBridge.open(ENDPOINT, { fetch: unreachable })).rejects.toThrow(
      /^agent at http:\/\/agent\.test\/mcp: connection refused/,
    );
  });

  it('opens the session again when the agent answers 404 (a session it forgot), and sends the request once more', async () => {
    let forgotten = false;
    const face = fakeFace({
      answer: (message, session) => {
        if (forgotten && session === 'session-1' && message.method !== 'initialize')
          return new Response('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}', {
            status: 404,
          });
        return undefined;
      },
    });
    const bridge = (await McpBridge.open(ENDPOINT, { fetch: face.fetch }))!;
    expect((await bridge.callTool('convert', { value: 1 })).content).toEqual([{ type: 'text', text: 'in session-1' }]);
    forgotten = true;
    expect((await bridge.callTool('convert', { value: 1 })).content).toEqual([{ type: 'text', text: 'in session-2' }]);
    expect(face.seen.initializes).toBe(2);
    await bridge.close();
  });

  it('says the face is gone when the new session is answered 404 too', async () => {
    let gone = false;
    const face = fakeFace({
      answer: () => (gone ? new Response('{"status":"failure","error":"Not found"}', { status: 404 }) : undefined),
    });
    const bridge = (await McpBridge.open(ENDPOINT, { fetch: face.fetch }))!;
    gone = true;
    const failure = await bridge.callTool('convert', { value: 1 }).catch((error: unknown) => error);
    expect(failure).toMatchObject({
      code: 'NOT_FOUND',
      message: `agent at ${ENDPOINT} serves no MCP face (answered 404: Not found)`,
    });
    await bridge.close();
  });

  it('passes on at most maxTools tools, and says so', async () => {
    const warnings: string[] = [];
    const face = fakeFace({ tools: Array.from({ length: 12 }, (_, index) => tool(`tool_${index}`)) });
    const bridge = (await McpBridge.open(ENDPOINT, {
      fetch: face.fetch,
      maxTools: 10,
      warn: (line) => warnings.push(line),
    }))!;
    const { tools } = await bridge.listTools(undefined);
    expect(tools.map((listed) => listed.name)).toEqual(Array.from({ length: 10 }, (_, index) => `tool_${index}`));
    expect((await bridge.listTools(undefined)).tools).toHaveLength(10);
    expect(warnings).toEqual([`agora mcp: ${ENDPOINT} listed 12 tools; the first 10 are passed on`]);
    await bridge.close();
  });

  it('refuses a reply over the size cap, and says so', async () => {
    const face = fakeFace({ tools: Array.from({ length: 50 }, (_, index) => tool(`tool_${index}`)) });
    const bridge = (await McpBridge.open(ENDPOINT, { fetch: face.fetch, maxReplyBytes: 1000 }))!;
    await expect(bridge.listTools(undefined)).rejects.toThrow(`agent at ${ENDPOINT}: reply larger than 1000 bytes`);
    await bridge.close();
  });

  it("passes on the agent's JSON-RPC errors with their code, as a host would read them over HTTP", async () => {
    const face = fakeFace({
      answer: (message) =>
        message.method === 'tools/call'
          ? new Response(
              JSON.stringify({
                jsonrpc: '2.0',
                id: message.id,
                error: { code: -32602, message: 'MCP error -32602: Unknown tool: nope' },
              }),
              { status: 200, headers: { 'content-type': 'application/json' } },
            )
          : undefined,
    });
    const bridge = (await McpBridge.open(ENDPOINT, { fetch: face.fetch }))!;
    const failure = await bridge.callTool('nope', {}).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(McpError);
    expect(failure).toMatchObject({ code: -32602, message: 'MCP error -32602: Unknown tool: nope' });
    await bridge.close();
  });
});

describe('how the bridge words a failure', () => {
  it('names the agent and what it answered, never a bare HTTP status', () => {
    const busy = new StreamableHTTPError(
      503,
      'Error POSTing to endpoint: {"jsonrpc":"2.0","error":{"code":-32000,"message":"Too many open MCP sessions: retry later"},"id":null}',
    );
    expect(failureOf(ENDPOINT, busy).message).toBe(
      `agent at ${ENDPOINT} answered 503: Too many open MCP sessions: retry later`,
    );
    const agora = new StreamableHTTPError(404, 'Error POSTing to endpoint: {"status":"failure","error":"Not found"}');
    expect(failureOf(ENDPOINT, agora).message).toBe(`agent at ${ENDPOINT} answered 404: Not found`);
    const html = new StreamableHTTPError(-1, 'Unexpected content type: text/html');
    expect(failureOf(ENDPOINT, html).message).toBe(
      `agent at ${ENDPOINT} did not answer as MCP: Unexpected content type: text/html`,
    );
  });

  it('says a timeout is one, in seconds', () => {
    expect(
      failureOf(ENDPOINT, new McpError(ErrorCode.RequestTimeout, 'TimeoutError'), { timedOut: true, timeoutMs: 30_000 })
        .message,
    ).toBe(`agent at ${ENDPOINT}: no answer within 30 s`);
    expect(
      failureOf(ENDPOINT, new AgoraError('TIMEOUT', `POST ${ENDPOINT}: timed out after 500 ms`), { timeoutMs: 500 })
        .message,
    ).toBe(`agent at ${ENDPOINT}: no answer within 0.5 s`);
  });

  it("bounds the agent's text and strips its control characters, and shows no credentials of the URL", () => {
    const noisy = new StreamableHTTPError(
      500,
      `Error POSTing to endpoint: line one\n\u001b[31mforged line\r\n${'x'.repeat(1000)}`,
    );
    const message = failureOf('http://user:pass@agent.test/mcp?key=1', noisy).message;
    expect(message.startsWith('agent at http://agent.test/mcp answered 500: line one [31mforged line xxx')).toBe(true);
    expect(message).not.toMatch(/[\u0000-\u001f]|pass|key=/);
    expect(message.length).toBeLessThan(300);
  });
});
