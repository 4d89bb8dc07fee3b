import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agoraRouter } from '../src/express.js';
import { silentLogger } from '../src/log.js';
import { Receiver } from '../src/receiver.js';
import { scriptedModel } from '../src/testing/index.js';
import { makeAgentFolder } from './helpers/agent-folder.js';
import { allEvents, postStream } from './helpers/sse.js';

describe('agoraRouter streams', () => {
  let folder: Awaited<ReturnType<typeof makeAgentFolder>>;
  let receiver: Receiver;
  let server: ReturnType<ReturnType<typeof express>['listen']>;
  let base: string;
  const llm = scriptedModel();

  beforeAll(async () => {
    folder = await makeAgentFolder();
    receiver = await Receiver.start({ dir: folder.dir, watch: false, logger: silentLogger, llm });
    const app = express();
    app.use(express.json());
    app.use('/agora', agoraRouter(receiver));
    server = app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/agora`;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await receiver.close();
    await folder.cleanup();
  });

  it('answers Accept: text/event-stream with SSE; a model that cannot stream gives its text as one delta', async () => {
    llm.push('  Bonjour !  ');
    const response = await postStream(`${base}/`, { body: 'Salut' });
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const events = await allEvents(response);
    expect(events.map((event) => [event.event, event.data])).toEqual([
      ['delta', '{"delta":"Bonjour !"}'],
      ['done', '{"status":"success","body":"Bonjour !"}'],
    ]);
  });

  it('answers without the header as before', async () => {
    llm.push('Hello');
    const response = await fetch(`${base}/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ body: 'Hi' }),
    });
    expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(await response.json()).toEqual({ status: 'success', body: 'Hello' });
  });
});
