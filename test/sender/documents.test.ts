// src/sender/documents.ts: hash encoding discovery and protocol sources.
import { describe, expect, it } from 'vitest';
import { encodeHash } from '../../src/protocol/document.js';
import { encodeDataUri } from '../../src/protocol/sources.js';
import { DISTANCE, DISTANCE_HEX, recordingFetch, senderSuite } from '../helpers/sender.js';
import { pythonDataUri, pythonHash } from '../helpers/python-peer.js';

const { rawServer, sender, peers } = senderSuite({ python: true });

describe('discovery and sources', () => {
  it('reads /wellknown once, then sends a hex hash with a data: source', async () => {
    const { calls, fetch } = recordingFetch();
    const client = sender({ fetch });
    expect(await client.query(peers.agent.url, { protocol: DISTANCE, body: { miles: 5 } })).toEqual({
      body: { km: 8.047 },
    });
    expect(await client.query(peers.agent.url, { protocol: DISTANCE, body: { miles: 10 } })).toEqual({
      body: { km: 16.093 },
    });
    expect(calls.map((call) => `${call.method} ${call.url}`)).toEqual([
      `GET ${peers.agent.url}/wellknown`,
      `POST ${peers.agent.url}/`,
      `POST ${peers.agent.url}/`,
    ]);
    expect(calls[1]!.json).toEqual({
      protocolHash: DISTANCE_HEX,
      protocolSources: [encodeDataUri(DISTANCE)],
      body: { miles: 5 },
    });
  });

  it('adds its own /protocols/:hash URL to the sources when it runs a receiver', async () => {
    const { calls, fetch } = recordingFetch();
    await sender({ fetch, publicUrl: 'https://me.example/agora/' }).query(peers.agent.url, {
      protocol: DISTANCE,
      body: { miles: 1 },
    });
    expect(calls[1]!.json.protocolSources).toEqual([
      encodeDataUri(DISTANCE),
      `https://me.example/agora/protocols/${DISTANCE_HEX}`,
    ]);
  });

  it('sends natural language with a null hash and no sources, without discovery', async () => {
    const { calls, fetch } = recordingFetch();
    const reply = await sender({ fetch }).query(peers.agent.url, { body: 'How far is 3 miles in km?' });
    expect(reply).toEqual({ body: '3 miles is 4.828 km.' });
    expect(calls).toEqual([
      {
        method: 'POST',
        url: `${peers.agent.url}/`,
        json: { protocolHash: null, protocolSources: [], body: 'How far is 3 miles in km?' },
      },
    ]);
  });

  it('sends base64 to a peer whose /wellknown lists base64 keys', async () => {
    const seen: any[] = [];
    const peer = await rawServer((request, respond) => {
      if (request.method === 'GET')
        return respond(
          200,
          'application/json',
          JSON.stringify({ [encodeHash(DISTANCE_HEX, 'base64')]: ['/protocols/x'] }),
        );
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        seen.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        respond(200, 'application/json', '{"status":"success","body":"ok"}');
      });
    });
    await sender().query(peer.url, { protocol: DISTANCE, body: { miles: 1 } });
    expect(seen[0].protocolHash).toBe(encodeHash(DISTANCE_HEX, 'base64'));
  });
});

describe('Python SDK 0.2.0 peers', () => {
  it('sends base64 and a data: source to a peer without /wellknown', async () => {
    const client = sender();
    expect(await client.query(peers.python.url, { protocol: DISTANCE, body: { miles: 5 } })).toEqual({
      body: { km: 8.047 },
    });
    expect(peers.python.requests[0]).toEqual({ method: 'GET', path: '/wellknown' });
    // A body that is not a string goes as its JSON text; the reply, JSON text, is read back into a value.
    expect(peers.python.requests[1]!.json).toEqual({
      protocolHash: pythonHash(DISTANCE),
      protocolSources: [pythonDataUri(DISTANCE)],
      body: '{"miles":5}',
    });
    expect(peers.python.protocols.get(pythonHash(DISTANCE))).toBe(DISTANCE);
    // Natural language carries both fields too, which the Python receiver requires.
    expect(await client.query(peers.python.url, { body: 'hello' })).toEqual({ body: 'turn 1: hello' });
  });
});
