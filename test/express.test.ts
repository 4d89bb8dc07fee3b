import express from 'express';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { AgoraError, type AgoraErrorCode } from '../src/errors.js';
import { agoraRouter } from '../src/express.js';
import type { ReceiverApi, RequestContext } from '../src/receiver.js';

const METEO = '---\nname: Météo\ndescription: x\nmultiround: false\n---\nè\n';
const METEO_HEX = 'f827eb4b0c00d23021ebb9aed5a89ae3aeb4f92b';
const METEO_BASE64 = '+CfrSwwA0jAh67mu1aia4660+Ss=';

// In memory; `{"body": {"fail": CODE}}` throws that AgoraError.
function fakeReceiver() {
  const contexts: RequestContext[] = [];
  const followUps: string[] = [];
  const receiver: ReceiverApi = {
    async query(query, context) {
      if (context) contexts.push(context);
      const body = query.body;
      if (typeof body === 'object' && body !== null && 'fail' in body)
        throw new AgoraError(body.fail as AgoraErrorCode);
      return { status: 'success', body };
    },
    async followUp(id, followUp) {
      followUps.push(id);
      if (id === 'unknown') throw new AgoraError('CONVERSATION_NOT_FOUND');
      return { status: 'success', body: followUp.body, conversationId: id, conversationExpires: 1_900_000_000 };
    },
    async end() {},
    async wellknown(context) {
      if (context) contexts.push(context);
      return { [METEO_HEX]: [`${context?.baseUrl}/protocols/${METEO_HEX}`] };
    },
    async document(hash) {
      return hash === METEO_HEX ? METEO : undefined;
    },
    async metrics() {
      return 'agora_queries_total 1\n';
    },
    capabilities: {},
  };
  return { receiver, contexts, followUps };
}

function appWith(fake: ReceiverApi, jsonFirst: boolean) {
  const app = express();
  if (jsonFirst) app.use(express.json());
  app.use('/agora', agoraRouter(fake, { maxBodyBytes: 64 * 1024 }));
  app.get('/other', (_request, response) => void response.send('host route'));
  return app;
}

describe.each([
  ['on its own', false],
  ['after express.json()', true],
])('agoraRouter %s', (_name, jsonFirst) => {
  it('answers a query under the prefix', async () => {
    const app = appWith(fakeReceiver().receiver, jsonFirst);
    const response = await request(app)
      .post('/agora')
      .send({ protocolHash: null, protocolSources: [], body: { city: 'Paris' } });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.body).toEqual({ status: 'success', body: { city: 'Paris' } });
    expect((await request(app).post('/agora/').send({ body: 'hi' })).body).toEqual({ status: 'success', body: 'hi' });
  });

  it('routes on the prefix-relative path', async () => {
    const fake = fakeReceiver();
    const app = appWith(fake.receiver, jsonFirst);
    const followUp = await request(app)
      .post('/agora/conversations/abc_1')
      .send({ body: 2, protocolHash: METEO_BASE64 });
    expect(followUp.body).toEqual({
      status: 'success',
      body: 2,
      conversationId: 'abc_1',
      conversationExpires: 1_900_000_000,
    });
    expect(fake.followUps).toEqual(['abc_1']);
    expect((await request(app).delete('/agora/conversations/abc_1')).text).toBe('{"status":"success","body":null}');
    expect((await request(app).get('/agora/health')).body).toEqual({ status: 'ok' });
    expect((await request(app).get('/agora/metrics')).headers['content-type']).toBe(
      'text/plain; version=0.0.4; charset=utf-8',
    );
    expect((await request(app).get('/other')).text).toBe('host route');
  });

  it('gives the receiver a base URL that includes the prefix', async () => {
    const fake = fakeReceiver();
    const app = appWith(fake.receiver, jsonFirst);
    const response = await request(app).get('/agora/.wellknown');
    const [source] = (response.body as Record<string, string[]>)[METEO_HEX] ?? [];
    expect(source).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/agora/protocols/${METEO_HEX}$`));
    expect(fake.contexts.at(-1)?.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/agora$/);
  });

  it('serves a protocol document by percent-encoded base64 with its exact bytes', async () => {
    const response = await request(app(jsonFirst))
      .get(`/agora/protocols/${encodeURIComponent(METEO_BASE64)}`)
      .buffer(true)
      .parse((stream, done) => {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => done(null, Buffer.concat(chunks)));
      });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect((response.body as Buffer).equals(Buffer.from(METEO, 'utf8'))).toBe(true);
  });

  it('answers Agora failures, 404 and 405 as JSON', async () => {
    const app = appWith(fakeReceiver().receiver, jsonFirst);
    const unsupported = await request(app)
      .post('/agora')
      .send({ body: { fail: 'UNSUPPORTED_PROTOCOL' } });
    expect(unsupported.status).toBe(200);
    expect(unsupported.body).toEqual({ status: 'failure', error: 'Unsupported protocol' });
    const unknown = await request(app).post('/agora/conversations/unknown').send({ body: 1 });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ status: 'failure', error: 'Conversation not found' });
    const missing = await request(app).get('/agora/nope');
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(missing.body).toEqual({ status: 'failure', error: 'Not found' });
    const wrongMethod = await request(app).put('/agora/wellknown').send({ body: 1 });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.body).toEqual({ status: 'failure', error: 'Method not allowed' });
  });

  it('answers wrong field types with 400 JSON naming the field', async () => {
    const app = appWith(fakeReceiver().receiver, jsonFirst);
    const response = await request(app).post('/agora').send({ body: 1, multiround: 'yes' });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ status: 'failure', error: 'multiround must be a boolean' });
    expect((await request(app).post('/agora').send({ protocolHash: 1 })).body.error).toContain(
      'protocolHash must be a string or null',
    );
  });

  it('accepts a JSON body sent as text/plain', async () => {
    const response = await request(appWith(fakeReceiver().receiver, jsonFirst))
      .post('/agora')
      .set('content-type', 'text/plain')
      .send('{"body": "plain"}');
    expect(response.body).toEqual({ status: 'success', body: 'plain' });
  });
});

function app(jsonFirst: boolean) {
  return appWith(fakeReceiver().receiver, jsonFirst);
}

describe('agoraRouter without a host body parser', () => {
  it('answers malformed JSON with 400 JSON, not HTML', async () => {
    const response = await request(app(false)).post('/agora').set('content-type', 'application/json').send('{"body": ');
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.body).toEqual({ status: 'failure', error: 'Request body must be a JSON object' });
  });

  it('answers a body over the limit with 413 JSON, not HTML', async () => {
    const response = await request(app(false))
      .post('/agora')
      .send({ body: 'x'.repeat(128 * 1024) });
    expect(response.status).toBe(413);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.body).toEqual({ status: 'failure', error: 'Request too large' });
  });
});

describe('agoraRouter after a host body parser with a larger limit', () => {
  it('still applies its own size limit', async () => {
    const host = express();
    host.use(express.json({ limit: '10mb' }));
    host.use('/agora', agoraRouter(fakeReceiver().receiver, { maxBodyBytes: 1024 }));
    const response = await request(host)
      .post('/agora')
      .send({ body: 'x'.repeat(4096) });
    expect(response.status).toBe(413);
    expect(response.body).toEqual({ status: 'failure', error: 'Request too large' });
  });
});

describe('agoraRouter mounted at the root', () => {
  it('serves its routes and leaves the host app its other paths', async () => {
    const host = express();
    host.use(agoraRouter(fakeReceiver().receiver));
    host.get('/home', (_request, response) => void response.send('home'));
    expect((await request(host).get('/wellknown')).status).toBe(200);
    expect((await request(host).post('/').send({ body: 1 })).body).toEqual({ status: 'success', body: 1 });
    expect((await request(host).get('/home')).text).toBe('home');
  });
});
