import { afterEach, describe, expect, it } from 'vitest';
import { canonicalJson, pythonFloat, RawNumber, type LosslessValue } from '../../src/bindings/roar/canonical.js';
import { hmacSignature, signingBody } from '../../src/bindings/roar/signing.js';
import { hashText } from '../../src/protocol/document.js';
import { echoProtocol, makeAgentFolder } from '../helpers/agent-folder.js';
import { runCli, startServe } from '../helpers/cli.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const NO_KEY = { ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: '' };
const SECRET = 'serve-secret';
const redisUrl = process.env.AGORA_TEST_REDIS_URL;

/** A ROAR message signed as ROAR's Python SDK signs it (HMAC over the canonical seven fields). */
function signed(to: string, id: string, payload: { [key: string]: LosslessValue }): string {
  const timestamp = new RawNumber(pythonFloat(Date.now() / 1000));
  const fields = {
    id,
    from: 'did:roar:agent:peer-0123456789abcdef',
    to,
    intent: 'execute',
    payload,
    context: {},
    timestamp,
  };
  return canonicalJson({
    roar: '1.0',
    ...fields,
    from: { did: fields.from },
    to: { did: to },
    auth: { signature: hmacSignature(signingBody(fields), SECRET), timestamp },
  });
}

async function echoFolder(): Promise<string> {
  const folder = await makeAgentFolder({
    'protocols/echo.md': echoProtocol(),
    'routines/echo.ts': 'export default (body: { message: string }) => ({ echo: body.message });',
  });
  cleanups.push(folder.cleanup);
  return folder.dir;
}

async function roarDid(url: string): Promise<string> {
  return ((await (await fetch(`${url}/roar/card`)).json()) as { identity: { did: string } }).identity.did;
}

describe('agora serve with its faces', () => {
  it('serves Agora, ROAR (signed), OAP and A2A on one port; --faces narrows them; a bad trust file is one line', async () => {
    const dir = await echoFolder();
    const hash = hashText(echoProtocol());
    const agent = await startServe([dir, '--port', '0', '--roar-secret', SECRET], { env: NO_KEY });
    cleanups.push(() => agent.stop('SIGKILL'));

    const agora = await fetch(`${agent.url}/`, {
      method: 'POST',
      body: JSON.stringify({ protocolHash: hash, body: { message: 'hi' } }),
    });
    expect(await agora.json()).toEqual({ status: 'success', body: { echo: 'hi' } });
    const oap = (await (await fetch(`${agent.url}/`)).json()) as { status: string; agent_id: string };
    expect(oap.status).toBe('ok');
    const card = (await (await fetch(`${agent.url}/.well-known/agent-card.json`)).json()) as {
      skills: { id: string }[];
    };
    expect(card.skills.map((skill) => skill.id)).toEqual([hash]);

    const did = await roarDid(agent.url);
    const reply = await fetch(`${agent.url}/roar/message`, {
      method: 'POST',
      body: signed(did, 'msg_serve_1', { protocolHash: hash, body: { message: 'hé' } }),
    });
    const text = await reply.text();
    const message = JSON.parse(text) as { payload: unknown; auth: { signature: string } };
    expect(message.payload).toEqual({ status: 'ok', result: { echo: 'hé' } });
    expect(message.auth.signature).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    const unsigned = await fetch(`${agent.url}/roar/message`, {
      method: 'POST',
      body: JSON.stringify({
        roar: '1.0',
        id: 'x',
        from: { did: 'did:roar:agent:p-1' },
        to: { did },
        intent: 'ask',
        payload: { text: 'hi' },
      }),
    });
    expect(unsigned.status).toBe(401);
    expect(await agent.stop('SIGTERM')).toBe(0);

    const agoraOnly = await startServe([dir, '--port', '0', '--faces', 'agora'], { env: NO_KEY });
    cleanups.push(() => agoraOnly.stop('SIGKILL'));
    expect((await fetch(`${agoraOnly.url}/roar/health`)).status).toBe(404);
    expect((await fetch(`${agoraOnly.url}/wellknown`)).status).toBe(200);
    expect(await agoraOnly.stop('SIGTERM')).toBe(0);

    const bad = await runCli(['serve', dir, '--port', '0', '--roar-trust', `${dir}/protocols/echo.md`], {
      env: NO_KEY,
    });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(/ROAR trust file .*echo\.md is not JSON/);
  });

  it.skipIf(!redisUrl)('refuses a ROAR replay across two processes on one Redis', async () => {
    const dir = await echoFolder();
    const hash = hashText(echoProtocol());
    const store = `${redisUrl}${redisUrl!.includes('?') ? '&' : '?'}prefix=faces-${process.pid}-${Date.now()}:`;
    const first = await startServe([dir, '--port', '0', '--store', store, '--roar-secret', SECRET], { env: NO_KEY });
    cleanups.push(() => first.stop('SIGKILL'));
    const did = await roarDid(first.url);
    const second = await startServe([dir, '--port', '0', '--store', store, '--roar-secret', SECRET], { env: NO_KEY });
    cleanups.push(() => second.stop('SIGKILL'));
    // One identity for the agent, kept in the shared memory.
    expect(await roarDid(second.url)).toBe(did);

    const message = signed(did, `msg_replay_${Date.now()}`, { protocolHash: hash, body: { message: 'once' } });
    const accepted = await fetch(`${first.url}/roar/message`, { method: 'POST', body: message });
    expect(accepted.status).toBe(200);
    const replayed = await fetch(`${second.url}/roar/message`, { method: 'POST', body: message });
    expect(replayed.status).toBe(409);
    expect(await replayed.json()).toMatchObject({ error: 'duplicate_message' });
  });
});
