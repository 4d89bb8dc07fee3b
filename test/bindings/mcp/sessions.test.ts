// MCP sessions belong to the token that opened them, and their event streams are bounded per session and per client.
import { describe, expect, it } from 'vitest';
import { eventually } from '../../helpers/agent-folder.js';
import { makeFaces, serveFaces } from '../../faces/_helpers.js';

const JSON_AND_SSE = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' };

async function initialize(url: string, token?: string): Promise<string> {
  const response = await fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { ...JSON_AND_SSE, ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } },
    }),
  });
  expect(response.status).toBe(200);
  return response.headers.get('mcp-session-id')!;
}

function call(url: string, method: string, session: string, token?: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${url}/mcp`, {
    method,
    ...init,
    headers: {
      ...JSON_AND_SSE,
      'mcp-session-id': session,
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(init.headers as Record<string, string>),
    },
  });
}

const LIST = { body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) };

describe('MCP sessions', () => {
  it('answers a session only with the token that opened it: another token can neither continue, read nor end it', async () => {
    const served = await serveFaces(makeFaces({ tokens: ['alice', 'bob'] }));
    try {
      const session = await initialize(served.url, 'alice');
      expect((await call(served.url, 'POST', session, 'bob', LIST)).status).toBe(404);
      const stream = await call(served.url, 'GET', session, 'bob', { headers: { accept: 'text/event-stream' } });
      expect(stream.status).toBe(404);
      expect((await call(served.url, 'DELETE', session, 'bob')).status).toBe(404);
      expect((await call(served.url, 'POST', session, 'alice', LIST)).status).toBe(200);
      expect((await call(served.url, 'DELETE', session, 'alice')).status).toBe(200);
      expect((await call(served.url, 'POST', session, 'alice', LIST)).status).toBe(404);
    } finally {
      await served.close();
    }
  });

  it('holds one event stream per session, and a few per client', async () => {
    const served = await serveFaces(makeFaces({ mcpMaxStreamsPerClient: 2 }));
    const open: Response[] = [];
    const listen = async (session: string) => {
      const response = await call(served.url, 'GET', session, undefined, { headers: { accept: 'text/event-stream' } });
      open.push(response);
      return response.status;
    };
    try {
      const [first, second, third] = [
        await initialize(served.url),
        await initialize(served.url),
        await initialize(served.url),
      ];
      expect(await listen(first)).toBe(200);
      // As the SDK's own transport answers a second stream of one session.
      expect(await listen(first)).toBe(409);
      expect(await listen(second)).toBe(200);
      expect(await listen(third)).toBe(503);
      // A stream closed frees its place.
      await open[0]!.body!.cancel();
      await eventually(async () => (await listen(third)) === 200);
    } finally {
      for (const response of open) await response.body?.cancel().catch(() => undefined);
      await served.close();
    }
  });
});
