// Conformance with the wire profile (../shared/agora-spec.md), over real HTTP on loopback.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { startAgent } from '../src/agent.js';
import { startServer } from '../src/agent.js';
import { silentLogger } from '../src/log.js';
import { hashText, parseDocument } from '../src/protocol/document.js';
import { encodeDataUri } from '../src/protocol/sources.js';
import { Receiver, type ReceiverOptions } from '../src/receiver.js';
import { Sender } from '../src/sender/sender.js';
import { scriptedModel } from '../src/testing/index.js';
import { echoProtocol, makeAgentFolder } from './helpers/agent-folder.js';
import { pythonDataUri, pythonHash, pythonSend } from './helpers/python-peer.js';

const ECHO = echoProtocol();
const ECHO_HEX = hashText(ECHO);
const ECHO_BASE64 = hashText(ECHO, 'base64');
const ECHO_ROUTINE = 'export default (body: { message: string }) => ({ echo: body.message });\n';
const COUNTER =
  '---\nname: Counter\ndescription: Adds numbers over turns.\nmultiround: true\n---\nThe sender sends JSON {"add": number}; the receiver replies JSON {"total": number}.\n';
const COUNTER_ROUTINE = `export default (body: { add: number }, context: any) => {
  context.conversation.state.total = ((context.conversation.state.total as number | undefined) ?? 0) + body.add;
  return { total: context.conversation.state.total };
};
`;
const THROWING_ROUTINE = "export default () => { throw new Error('secret in /srv/db'); };\n";
const SLOW_ROUTINE = 'export default () => new Promise((resolve) => setTimeout(() => resolve(1), 5000));\n';
// A document learned from peers: no folder holds it.
const TIDES =
  '---\nname: Tide table\ndescription: High tide at a port.\nmultiround: false\n---\nThe sender sends JSON {"port": string}. The receiver replies JSON {"high": "HH:MM"}.\n';
const TIDES_HEX = hashText(TIDES);

const NATURAL_LANGUAGE_REFUSAL = 'This agent only accepts queries under the protocols listed at /wellknown';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Agent = { receiver: Receiver; url: string; dir: string };

async function agentAt(dir: string, options: Partial<ReceiverOptions> = {}): Promise<Agent> {
  const receiver = await Receiver.start({ dir, watch: false, logger: silentLogger, ...options });
  const server = await startServer(receiver, { port: 0, host: '127.0.0.1', logger: silentLogger });
  cleanups.push(
    () => receiver.close(),
    () => server.close(),
  );
  return { receiver, url: server.url, dir };
}

async function agent(files: Record<string, string>, options: Partial<ReceiverOptions> = {}): Promise<Agent> {
  const folder = await makeAgentFolder(files);
  cleanups.push(folder.cleanup);
  return agentAt(folder.dir, options);
}

async function http(
  method: string,
  url: string,
  body?: unknown,
): Promise<{ status: number; type: string | null; json: any }> {
  const response = await fetch(url, {
    method,
    ...(body === undefined
      ? {}
      : {
          headers: { 'content-type': 'application/json' },
          body: typeof body === 'string' ? body : JSON.stringify(body),
        }),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: response.status, type: response.headers.get('content-type'), json };
}

const post = (url: string, body: unknown) => http('POST', url, body);
const failure = (error: string) => ({ status: 'failure', error });

/** A clock tests move by hand (Unix ms). */
function clock(start = 1_800_000_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

/** A loopback HTTP server serving fixed texts by path, counting hits. */
async function sourceServer(routes: Record<string, string>): Promise<{ url: string; hits: string[] }> {
  const hits: string[] = [];
  const server: Server = createServer((request, response) => {
    hits.push(request.url ?? '');
    const text = routes[request.url ?? ''];
    if (text === undefined) response.writeHead(404).end();
    else response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

describe('spec §2: the error table over HTTP', () => {
  it('answers an unknown hash, with no source or only mismatching ones, 200 Unsupported protocol', async () => {
    const { url } = await agent({ 'protocols/echo.md': ECHO, 'routines/echo.ts': ECHO_ROUTINE });
    for (const request of [
      { protocolHash: TIDES_HEX, body: {} },
      { protocolHash: TIDES_HEX, protocolSources: [], body: {} },
      { protocolHash: TIDES_HEX, protocolSources: [encodeDataUri(ECHO)], body: {} },
      { protocolHash: 'not-a-hash', protocolSources: [encodeDataUri(TIDES)], body: {} },
    ]) {
      const response = await post(`${url}/`, request);
      expect(response.status).toBe(200);
      expect(response.type).toBe('application/json; charset=utf-8');
      expect(response.json).toEqual(failure('Unsupported protocol'));
    }
  });

  it('answers a protocol it can neither run a routine nor an LLM for with Unsupported protocol', async () => {
    const { url } = await agent({ 'protocols/echo.md': ECHO });
    expect(await post(`${url}/`, { protocolHash: ECHO_HEX, body: { message: 'x' } })).toMatchObject({
      status: 200,
      json: failure('Unsupported protocol'),
    });
    // A learned one, without an LLM to judge or answer it.
    expect(
      await post(`${url}/`, { protocolHash: TIDES_HEX, protocolSources: [encodeDataUri(TIDES)], body: {} }),
    ).toMatchObject({ status: 200, json: failure('Unsupported protocol') });
  });

  it('answers natural language without an LLM with the fixed text, also with multiround', async () => {
    const { url } = await agent({});
    expect(await post(`${url}/`, { body: 'hi' })).toMatchObject({
      status: 200,
      json: failure(NATURAL_LANGUAGE_REFUSAL),
    });
    expect(
      await post(`${url}/`, { protocolHash: null, protocolSources: [], multiround: true, body: 'hi' }),
    ).toMatchObject({ status: 200, json: failure(NATURAL_LANGUAGE_REFUSAL) });
  });

  it('answers a throwing or slow routine with Routine failed and no details', async () => {
    const slow = echoProtocol('Slow');
    const { url } = await agent(
      {
        'protocols/echo.md': ECHO,
        'routines/echo.ts': THROWING_ROUTINE,
        'protocols/slow.md': slow,
        'routines/slow.ts': SLOW_ROUTINE,
      },
      { routineTimeoutMs: 50 },
    );
    expect(await post(`${url}/`, { protocolHash: ECHO_HEX, body: { message: 'x' } })).toEqual({
      status: 200,
      type: 'application/json; charset=utf-8',
      json: failure('Routine failed'),
    });
    expect(await post(`${url}/`, { protocolHash: hashText(slow), body: { message: 'x' } })).toMatchObject({
      status: 200,
      json: failure('Routine failed'),
    });
  });

  it('answers a failing LLM with LLM unavailable', async () => {
    const { url } = await agent({}, { llm: scriptedModel([new Error('down')]) });
    expect(await post(`${url}/`, { body: 'hi' })).toMatchObject({ status: 200, json: failure('LLM unavailable') });
  });

  it('answers a malformed request with 400 naming the field, and a large one with 413', async () => {
    const { url } = await agent({ 'protocols/echo.md': ECHO, 'routines/echo.ts': ECHO_ROUTINE });
    const notJson = await post(`${url}/`, '{not json');
    expect(notJson.status).toBe(400);
    expect(notJson.json.status).toBe('failure');
    for (const [request, field] of [
      [{ protocolHash: ECHO_HEX }, 'body'],
      [{ protocolHash: 5, body: {} }, 'protocolHash'],
      [{ protocolHash: ECHO_HEX, protocolSources: 'data:,x', body: {} }, 'protocolSources'],
      [{ protocolHash: ECHO_HEX, protocolSources: [1], body: {} }, 'protocolSources'],
      [{ body: 'hi', multiround: 'yes' }, 'multiround'],
    ] as const) {
      const response = await post(`${url}/`, request);
      expect(response.status).toBe(400);
      expect(response.json.status).toBe('failure');
      expect(response.json.error).toContain(field);
    }
    const large = await post(`${url}/`, { body: 'x'.repeat(1024 * 1024 + 10) });
    expect(large).toEqual({ status: 413, type: 'application/json; charset=utf-8', json: failure('Request too large') });
  });
});

describe('spec §2: conversations', () => {
  async function counterAgent(options: Partial<ReceiverOptions> = {}) {
    return agent(
      {
        'protocols/counter.md': COUNTER,
        'routines/counter.ts': COUNTER_ROUTINE,
        'protocols/echo.md': ECHO,
        'routines/echo.ts': ECHO_ROUTINE,
      },
      options,
    );
  }

  it('sends conversationExpires on every multiround reply, sliding with each follow-up', async () => {
    const time = clock();
    const { url } = await counterAgent({ now: time.now, conversationTtlMs: 300_000 });
    const first = await post(`${url}/`, { protocolHash: hashText(COUNTER), body: { add: 1 }, multiround: true });
    expect(first.json).toMatchObject({
      status: 'success',
      body: { total: 1 },
      conversationExpires: Math.floor(time.now() / 1000) + 300,
    });
    expect(first.json.conversationId).toMatch(/^[A-Za-z0-9_-]{21,}$/);
    time.advance(100_000);
    const second = await post(`${url}/conversations/${first.json.conversationId}`, { body: { add: 2 } });
    expect(second.json).toEqual({
      status: 'success',
      body: { total: 3 },
      conversationId: first.json.conversationId,
      conversationExpires: Math.floor(time.now() / 1000) + 300,
    });
  });

  it('accepts a follow-up repeating the hash in the other encoding, sources, multiround and a status field', async () => {
    const { url } = await counterAgent();
    const counterHex = hashText(COUNTER);
    const first = await post(`${url}/`, {
      protocolHash: counterHex,
      protocolSources: [],
      body: { add: 1 },
      multiround: true,
    });
    const id = first.json.conversationId as string;
    for (const [index, protocolHash] of [hashText(COUNTER, 'base64'), counterHex.toUpperCase(), counterHex].entries()) {
      const response = await post(`${url}/conversations/${id}`, {
        protocolHash,
        protocolSources: [pythonDataUri(COUNTER)],
        multiround: true,
        status: 'success',
        body: { add: 1 },
      });
      expect(response).toMatchObject({
        status: 200,
        json: {
          status: 'success',
          body: { total: index + 2 },
          conversationId: id,
          conversationExpires: expect.any(Number),
        },
      });
    }
    const changed = await post(`${url}/conversations/${id}`, { protocolHash: ECHO_BASE64, body: { add: 1 } });
    expect(changed).toEqual({
      status: 400,
      type: 'application/json; charset=utf-8',
      json: failure('Protocol cannot change within a conversation'),
    });
  });

  it('answers an expired conversation with 200 Conversation expired, on POST and on DELETE before any sweep', async () => {
    const time = clock();
    const { url } = await counterAgent({ now: time.now, conversationTtlMs: 300_000 });
    const start = async () =>
      (await post(`${url}/`, { protocolHash: hashText(COUNTER), body: { add: 1 }, multiround: true })).json
        .conversationId as string;
    const first = await start();
    const second = await start();
    time.advance(300_001);
    expect(await post(`${url}/conversations/${first}`, { body: { add: 1 } })).toEqual({
      status: 200,
      type: 'application/json; charset=utf-8',
      json: failure('Conversation expired'),
    });
    expect(await http('DELETE', `${url}/conversations/${second}`)).toEqual({
      status: 200,
      type: 'application/json; charset=utf-8',
      json: failure('Conversation expired'),
    });
  });

  it('keeps the tombstone of an expired conversation at least one TTL, also when the TTL exceeds the default period', async () => {
    const time = clock();
    const ttl = 3 * 3600;
    const { url, receiver } = await counterAgent({ now: time.now, conversationTtlMs: ttl * 1000 });
    const id = (await post(`${url}/`, { protocolHash: hashText(COUNTER), body: { add: 1 }, multiround: true })).json
      .conversationId as string;
    time.advance(ttl * 1000 + 1);
    await receiver.store.sweep();
    time.advance(ttl * 1000 - 1000);
    await receiver.store.sweep();
    expect(await post(`${url}/conversations/${id}`, { body: { add: 1 } })).toMatchObject({
      status: 200,
      json: failure('Conversation expired'),
    });
  });

  it('answers a conversation never known with 404 Conversation not found, on POST and DELETE', async () => {
    const { url } = await counterAgent();
    for (const method of ['POST', 'DELETE']) {
      expect(
        await http(method, `${url}/conversations/${'x'.repeat(24)}`, method === 'POST' ? { body: {} } : undefined),
      ).toEqual({
        status: 404,
        type: 'application/json; charset=utf-8',
        json: failure('Conversation not found'),
      });
    }
  });
});

describe('spec §2: GET /protocols/:hash', () => {
  it('serves the exact bytes as text/plain; charset=utf-8, by hex or percent-encoded base64 with + and /', async () => {
    // A document whose base64 hash holds both `+` and `/`, with CRLF, a BOM and accents.
    let text = '';
    for (let index = 0; ; index++) {
      text = `\uFEFF---\r\nname: Météo ${index}\r\ndescription: é\r\nmultiround: false\r\n---\r\nLe récepteur répond.\r\n`;
      const base64 = hashText(text, 'base64');
      if (base64.includes('+') && base64.includes('/')) break;
    }
    const { url } = await agent({ 'protocols/meteo.md': text, 'routines/meteo.ts': ECHO_ROUTINE });
    const base64 = hashText(text, 'base64');
    for (const key of [
      hashText(text),
      hashText(text).toUpperCase(),
      encodeURIComponent(base64),
      base64.replace(/\+/g, '%2B').replace(/=/g, '%3D'),
    ]) {
      const response = await fetch(`${url}/protocols/${key}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(Buffer.from(await response.arrayBuffer()).equals(Buffer.from(text, 'utf8'))).toBe(true);
    }
    const missing = await http('GET', `${url}/protocols/${TIDES_HEX}`);
    expect(missing.status).toBe(404);
    expect(missing.json.status).toBe('failure');
  });
});

describe('spec §7: a Python SDK sender against our receiver', () => {
  it('runs natural language (multiround: true, re-sent fields, DELETE) and a known hash with protocolSources: []', async () => {
    const llm = scriptedModel(['Hello there.', 'Again.']);
    const { url } = await agent({ 'protocols/echo.md': ECHO, 'routines/echo.ts': ECHO_ROUTINE }, { llm });
    const chat = await pythonSend(url, { bodies: ['Hi', 'And again?'] });
    expect(chat.replies[0]).toMatchObject({
      status: 'success',
      body: 'Hello there.',
      conversationId: expect.any(String),
      conversationExpires: expect.any(Number),
    });
    expect(chat.replies[1]).toMatchObject({
      status: 'success',
      body: 'Again.',
      conversationId: chat.replies[0].conversationId,
      conversationExpires: expect.any(Number),
    });
    expect(chat.replies[2]).toEqual({ status: 'success', body: null });

    const known = await post(`${url}/`, {
      protocolHash: pythonHash(ECHO),
      protocolSources: [],
      body: { message: 'm' },
    });
    expect(known.json).toEqual({ status: 'success', body: { echo: 'm' } });
    const multi = await pythonSend(url, {
      protocol: ECHO,
      multiround: true,
      bodies: [{ message: 'a' }, { message: 'b' }],
    });
    expect(multi.replies.map((reply: { body: unknown }) => reply.body)).toEqual([{ echo: 'a' }, { echo: 'b' }, null]);
  });
});

describe('spec §3: protocol sources', () => {
  it('tries sources in order, the first match wins, and reads none once the hash is known', async () => {
    const sources = await sourceServer({ '/wrong': ECHO, '/right': TIDES, '/later': TIDES });
    const llm = scriptedModel(['Suitable.\nYES', '{"high": "06:00"}', '{"high": "07:00"}']);
    const { url } = await agent({}, { llm, allowPrivateSources: true });
    const request = {
      protocolHash: hashText(TIDES, 'base64'),
      protocolSources: [`${sources.url}/wrong`, 'data:text/html,nope', `${sources.url}/right`, `${sources.url}/later`],
      body: { port: 'Brest' },
    };
    expect((await post(`${url}/`, request)).json).toEqual({ status: 'success', body: { high: '06:00' } });
    expect(sources.hits).toEqual(['/wrong', '/right']);
    expect((await post(`${url}/`, request)).json).toEqual({ status: 'success', body: { high: '07:00' } });
    expect(sources.hits).toEqual(['/wrong', '/right']);
  });

  it('refuses loopback sources by default', async () => {
    const sources = await sourceServer({ '/right': TIDES });
    const { url } = await agent({}, { llm: scriptedModel(['YES', '{"high": "06:00"}']) });
    expect(
      (await post(`${url}/`, { protocolHash: TIDES_HEX, protocolSources: [`${sources.url}/right`], body: {} })).json,
    ).toEqual(failure('Unsupported protocol'));
    expect(sources.hits).toEqual([]);
  });
});

describe('spec §4: /wellknown and what survives a restart', () => {
  it('lists its own documents when it can answer them, never judged; none without routine or LLM', async () => {
    const notes = echoProtocol('Notes');
    const withLlm = await agent(
      { 'protocols/echo.md': ECHO, 'routines/echo.ts': ECHO_ROUTINE, 'protocols/notes.md': notes },
      { llm: scriptedModel([]) },
    );
    expect(Object.keys((await http('GET', `${withLlm.url}/wellknown`)).json).sort()).toEqual(
      [ECHO_HEX, hashText(notes)].sort(),
    );
    expect(Object.keys((await http('GET', `${withLlm.url}/.wellknown`)).json).sort()).toEqual(
      [ECHO_HEX, hashText(notes)].sort(),
    );
    const withoutLlm = await agent({
      'protocols/echo.md': ECHO,
      'routines/echo.ts': ECHO_ROUTINE,
      'protocols/notes.md': notes,
    });
    expect((await http('GET', `${withoutLlm.url}/wellknown`)).json).toEqual({
      [ECHO_HEX]: [`${withoutLlm.url}/protocols/${ECHO_HEX}`],
    });
  });

  it('stores a document first met with a query (as a negotiated one arrives), lists it once judged suitable, and keeps it across a restart', async () => {
    const folder = await makeAgentFolder({});
    cleanups.push(folder.cleanup);
    const first = await agentAt(folder.dir, { llm: scriptedModel(['I can.\nYES', '{"high": "06:00"}']) });
    expect((await http('GET', `${first.url}/wellknown`)).json).toEqual({});
    const reply = await post(`${first.url}/`, {
      protocolHash: TIDES_HEX,
      protocolSources: [encodeDataUri(TIDES)],
      body: { port: 'Brest' },
    });
    expect(reply.json).toEqual({ status: 'success', body: { high: '06:00' } });
    expect(Object.keys((await http('GET', `${first.url}/wellknown`)).json)).toEqual([TIDES_HEX]);
    await first.receiver.close();

    const llm = scriptedModel(['{"high": "07:00"}']);
    const second = await agentAt(folder.dir, { llm });
    expect(Object.keys((await http('GET', `${second.url}/wellknown`)).json)).toEqual([TIDES_HEX]);
    const document = await fetch(`${second.url}/protocols/${encodeURIComponent(hashText(TIDES, 'base64'))}`);
    expect(await document.text()).toBe(TIDES);
    expect(
      (await post(`${second.url}/`, { protocolHash: hashText(TIDES, 'base64'), body: { port: 'Brest' } })).json,
    ).toEqual({ status: 'success', body: { high: '07:00' } });
    expect(llm.requests).toHaveLength(1);
  });

  it('lists what another process sharing the memory learned and judged suitable', async () => {
    const folder = await makeAgentFolder({});
    cleanups.push(folder.cleanup);
    const one = await agentAt(folder.dir, { llm: scriptedModel(['YES', '{"high": "06:00"}']) });
    // The second process looks at what others learned at most once a second, by its clock.
    let now = Date.now();
    const two = await agentAt(folder.dir, { llm: scriptedModel([]), now: () => now });
    expect((await http('GET', `${two.url}/wellknown`)).json).toEqual({});
    now += 1100;
    expect(
      (await post(`${one.url}/`, { protocolHash: TIDES_HEX, protocolSources: [encodeDataUri(TIDES)], body: {} })).json,
    ).toEqual({ status: 'success', body: { high: '06:00' } });
    expect(Object.keys((await http('GET', `${two.url}/wellknown`)).json)).toEqual([TIDES_HEX]);
  });

  it('does not list a learned document before it is judged', async () => {
    const folder = await makeAgentFolder({});
    cleanups.push(folder.cleanup);
    const { url } = await agentAt(folder.dir, { llm: scriptedModel([new Error('down')]) });
    expect(
      (await post(`${url}/`, { protocolHash: TIDES_HEX, protocolSources: [encodeDataUri(TIDES)], body: {} })).json,
    ).toEqual(failure('LLM unavailable'));
    expect((await http('GET', `${url}/wellknown`)).json).toEqual({});
  });
});

describe('spec §1: the text is the exact bytes hashed', () => {
  it('keeps a BOM in the text, so a learned document keeps its hash across a restart', async () => {
    const bom = `\uFEFF${TIDES}`;
    expect(parseDocument(Buffer.from(bom, 'utf8')).text).toBe(bom);
    const folder = await makeAgentFolder({});
    cleanups.push(folder.cleanup);
    const first = await agentAt(folder.dir, { llm: scriptedModel(['YES', '{"high": "06:00"}']) });
    const request = {
      protocolHash: hashText(bom, 'base64'),
      protocolSources: [`data:text/plain;charset=utf-8;base64,${Buffer.from(bom, 'utf8').toString('base64')}`],
      body: {},
    };
    expect((await post(`${first.url}/`, request)).json).toEqual({ status: 'success', body: { high: '06:00' } });
    const served = await fetch(`${first.url}/protocols/${hashText(bom)}`);
    expect(hashText(Buffer.from(await served.arrayBuffer()))).toBe(hashText(bom));
    await first.receiver.close();

    const second = await agentAt(folder.dir, { llm: scriptedModel(['{"high": "07:00"}']) });
    expect((await post(`${second.url}/`, { protocolHash: hashText(bom), body: {} })).json).toEqual({
      status: 'success',
      body: { high: '07:00' },
    });
  });

  it('lets our sender query under a document read from a file with a BOM', async () => {
    const bom = `\uFEFF${TIDES}`;
    const { url } = await agent({}, { llm: scriptedModel(['YES', '{"high": "06:00"}']) });
    const sender = new Sender({ logger: silentLogger });
    expect(
      await sender.query(url, {
        protocol: parseDocument(Buffer.from(bom, 'utf8'), 'tides.md'),
        body: { port: 'Brest' },
      }),
    ).toEqual({ body: { high: '06:00' } });
  });

  it('refuses bytes that are not UTF-8 rather than serving other bytes under their hash', async () => {
    const bytes = Buffer.concat([Buffer.from(TIDES, 'utf8'), Buffer.from([0xff, 0x0a])]);
    expect(() => parseDocument(bytes, 'x.md')).toThrow(/x\.md: not valid UTF-8/);
  });
});

const redisUrl = process.env.AGORA_TEST_REDIS_URL;

describe.skipIf(!redisUrl)('spec §2: tombstones in a Redis store last at least one TTL', () => {
  it('keeps the tombstone of a conversation one TTL past its expiry when the TTL exceeds the default period', async () => {
    const folder = await makeAgentFolder({ 'protocols/counter.md': COUNTER, 'routines/counter.ts': COUNTER_ROUTINE });
    cleanups.push(folder.cleanup);
    const prefix = `agora-conformance:${Date.now()}:`;
    const ttl = 3 * 3600;
    const running = await startAgent({
      dir: folder.dir,
      port: 0,
      host: '127.0.0.1',
      watch: false,
      logger: silentLogger,
      llm: null,
      conversationTtlMs: ttl * 1000,
      store: `${redisUrl}?prefix=${encodeURIComponent(prefix)}`,
    });
    const redis = new Redis(redisUrl ?? '');
    cleanups.push(
      async () => {
        const keys = await redis.keys(`${prefix}*`);
        if (keys.length) await redis.del(...keys);
        await redis.quit();
      },
      () => running.close(),
    );
    const reply = await post(`${running.url}/`, {
      protocolHash: hashText(COUNTER),
      body: { add: 1 },
      multiround: true,
    });
    // The record itself answers "expired" for the tombstone period after its logical expiry.
    // The key carries its id as a hash tag (one slot per conversation on a cluster).
    const left = await redis.pttl(`${prefix}conversation:{${reply.json.conversationId}}`);
    expect(left).toBeGreaterThan(2 * ttl * 1000 - 60_000);
  });
});
