import { request as httpRequest, Agent } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { hashText } from '../../src/protocol/document.js';
import { echoProtocol, makeAgentFolder } from '../helpers/agent-folder.js';
import { runCli, startServe, type StartedCommand } from '../helpers/cli.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const NO_KEY = { ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: '' };
// A whole request record of the text format: time, name, level, id, method, path, status, duration, path taken.
const RECORD =
  /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z agora info request [A-Za-z0-9_-]{12}: POST \/ 200 \d+\.\dms routine "Echo"(?: ms=[\d.]+)? protocol=[0-9a-f]{40,64}$/;

async function echoAgent(args: string[]): Promise<{ agent: StartedCommand; hash: string }> {
  const folder = await makeAgentFolder({
    'protocols/echo.md': echoProtocol(),
    'routines/echo.ts': 'export default (body: { message: string }) => ({ echo: body.message });',
  });
  cleanups.push(folder.cleanup);
  const agent = await startServe([folder.dir, '--port', '0', ...args], { env: NO_KEY });
  cleanups.push(() => agent.stop('SIGKILL'));
  return { agent, hash: hashText(echoProtocol()) };
}

// One POST on a kept-alive connection: resolves with the status, or undefined if the server went away first.
function post(url: string, body: string, agent: Agent): Promise<number | undefined> {
  return new Promise((resolve) => {
    const outgoing = httpRequest(`${url}/`, { method: 'POST', agent, headers: { 'content-type': 'application/json' } });
    outgoing.on('response', (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode));
      response.on('error', () => resolve(undefined));
    });
    outgoing.on('error', () => resolve(undefined));
    outgoing.end(body);
  });
}

// The same record in JSON (pino's line, with the fields).
const JSON_RECORD =
  /^\{"level":"info","time":"[^"]+","name":"agora","requestId":"[A-Za-z0-9_-]{12}","method":"POST","path":"\/","status":200,"ms":[\d.]+,"protocol":"[0-9a-f]{40,64}","protocolName":"Echo","taken":"routine","msg":"request [A-Za-z0-9_-]{12}: POST \/ 200 [\d.]+ms routine \\"Echo\\""\}$/;

const requestLines = (output: string) => output.split('\n').filter((line) => /[ "]request /.test(line));

describe('the request log of agora serve', () => {
  it.each([
    ['text', RECORD],
    ['json', JSON_RECORD],
  ])('has the line of every answered request after a SIGTERM under load, none torn (%s)', async (format, shape) => {
    const { agent, hash } = await echoAgent(['--log-format', format]);
    const body = JSON.stringify({ protocolHash: hash, body: { message: 'hi' } });
    const pool = new Agent({ keepAlive: true, maxSockets: 32 });
    cleanups.push(async () => pool.destroy());
    let answered = 0;
    // 32 clients in a loop, until the server stops answering; the SIGTERM lands while requests are in flight.
    const clients = Array.from({ length: 32 }, async () => {
      while ((await post(agent.url, body, pool)) === 200) answered += 1;
    });
    while (answered < 3000) await new Promise((resolve) => setTimeout(resolve, 20));
    const code = await agent.stop('SIGTERM');
    await Promise.all(clients);
    expect(code).toBe(0);
    const lines = requestLines(agent.output());
    // Lines of requests whose answers were cut off by the shutdown may be there too, never fewer.
    expect(lines.length).toBeGreaterThanOrEqual(answered);
    expect(lines.filter((line) => !shape.test(line))).toEqual([]);
    expect(new Set(lines.map((line) => /request ([A-Za-z0-9_-]{12}):/.exec(line)![1])).size).toBe(lines.length);
    expect(agent.output()).toContain('SIGTERM: shutting down');
  });

  it('writes the record of a lone request at once, not when a batch fills', async () => {
    const { agent, hash } = await echoAgent([]);
    const reply = await fetch(`${agent.url}/`, {
      method: 'POST',
      body: JSON.stringify({ protocolHash: hash, body: { message: 'hi' } }),
    });
    expect(reply.status).toBe(200);
    for (let tries = 0; requestLines(agent.output()).length === 0 && tries < 100; tries++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(requestLines(agent.output())).toEqual([expect.stringMatching(RECORD)]);
  });

  it('keeps no request record with --log-sample 0, and still writes the other records', async () => {
    const { agent, hash } = await echoAgent(['--log-sample', '0']);
    for (let index = 0; index < 20; index++) {
      const reply = await fetch(`${agent.url}/`, {
        method: 'POST',
        body: JSON.stringify({ protocolHash: hash, body: { message: 'hi' } }),
      });
      expect(reply.status).toBe(200);
    }
    expect(await agent.stop('SIGTERM')).toBe(0);
    expect(requestLines(agent.output())).toEqual([]);
    expect(agent.output()).toContain('SIGTERM: shutting down');
  });

  it('refuses a --log-sample outside 0 to 1 with one line', async () => {
    for (const value of ['1.5', 'half']) {
      const { code, stderr } = await runCli(['serve', '.', '--port', '0', '--log-sample', value], { env: NO_KEY });
      expect(code).toBe(2);
      expect(stderr.trim().split('\n')).toEqual([expect.stringMatching(/^agora serve: --log-sample must be/)]);
    }
  });
});
