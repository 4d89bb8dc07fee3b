// src/sender/transport.ts: failures read into AgoraErrors that name the method and URL.
import { describe, expect, it } from 'vitest';
import { NL_ONLY, NOT_SERVED, failureOf, senderSuite } from '../helpers/sender.js';
import { pythonHash } from '../helpers/python-peer.js';

const { rawServer, sender, peers } = senderSuite({ routinesOnly: true, python: true });

describe('peer failures', () => {
  it("reads failures into AgoraError with the peer's exact text and status", async () => {
    const client = sender();
    const natural = await failureOf(client.query(peers.routinesOnly.url, { body: 'hello' }));
    expect(natural).toMatchObject({
      code: 'PEER_FAILURE',
      message: `POST ${peers.routinesOnly.url}/: failure: ${NL_ONLY}`,
      status: 200,
    });
    const unsupported = await failureOf(
      client.query(peers.routinesOnly.url, { protocol: NOT_SERVED, body: { sign: 'Leo' } }),
    );
    expect(unsupported).toMatchObject({
      code: 'PEER_FAILURE',
      message: `POST ${peers.routinesOnly.url}/: failure: Unsupported protocol`,
      status: 200,
    });

    const conversation = client.conversation(peers.agent.url);
    const { conversationId } = await conversation.send('What is 1 mile in km?');
    await fetch(`${peers.agent.url}/conversations/${conversationId}`, { method: 'DELETE' });
    const expired = await failureOf(conversation.send('still there?'));
    expect(expired).toMatchObject({
      code: 'PEER_FAILURE',
      message: `POST ${peers.agent.url}/conversations/${conversationId}: failure: Conversation expired`,
      status: 200,
    });
    await conversation.close(); // already gone: closing is done, not an error

    const forgetful = await rawServer((request, respond) =>
      request.url === '/'
        ? respond(
            200,
            'application/json',
            '{"status":"success","body":"hi","conversationId":"c1","conversationExpires":1900000000}',
          )
        : respond(404, 'application/json', '{"status":"failure","error":"Conversation not found"}'),
    );
    const lost = client.conversation(forgetful.url);
    await lost.send('hello');
    expect(await failureOf(lost.send('again'))).toMatchObject({
      code: 'PEER_FAILURE',
      message: `POST ${forgetful.url}/conversations/c1: HTTP 404: Conversation not found`,
      status: 404,
    });
    await lost.close();
  });

  it('names the URL when the answer is not JSON, the peer is silent, or unreachable', async () => {
    const html = await rawServer((_request, respond) =>
      respond(502, 'text/html', '<html><body>Bad gateway</body></html>'),
    );
    const notJson = await failureOf(sender().query(html.url, { body: 'hi' }));
    expect(notJson).toMatchObject({ code: 'PEER_FAILURE', status: 502 });
    expect(notJson.message).toBe(`POST ${html.url}/: HTTP 502, not JSON: <html><body>Bad gateway</body></html>`);

    const silent = await rawServer(() => undefined);
    const timeout = await failureOf(sender({ timeoutMs: 200 }).query(silent.url, { body: 'hi' }));
    expect(timeout).toMatchObject({ code: 'TIMEOUT', message: `POST ${silent.url}/: no answer within 200 ms` });

    const closed = await rawServer(() => undefined);
    await new Promise<void>((resolve) => closed.server.close(() => resolve()));
    const refused = await failureOf(sender().query(closed.url, { body: 'hi' }));
    expect(refused.code).toBe('PEER_FAILURE');
    expect(refused.message).toBe(`POST ${closed.url}/: connection refused`);

    const wrong = await rawServer((_request, respond) => respond(200, 'application/json', '{"answer":42}'));
    expect((await failureOf(sender().query(wrong.url, { body: 'hi' }))).message).toBe(
      `POST ${wrong.url}/: HTTP 200, not an Agora reply`,
    );
  });
});

describe('Python SDK 0.2.0 peers', () => {
  it("reads the Python failure shape, keeping the peer's text", async () => {
    const refused = await failureOf(sender().query(peers.python.url, { protocol: NOT_SERVED, body: { sign: 'Leo' } }));
    expect(refused).toMatchObject({
      code: 'PEER_FAILURE',
      message: `POST ${peers.python.url}/: failure: ${pythonHash(NOT_SERVED)} is not suitable for execution`,
      status: 200,
    });
    const conversation = sender().conversation(peers.python.url);
    const { conversationId } = await conversation.send('hi');
    await fetch(`${peers.python.url}/conversations/${conversationId}`, { method: 'DELETE' });
    expect((await failureOf(conversation.send('again'))).message).toBe(
      `POST ${peers.python.url}/conversations/${conversationId}: failure: Conversation not found.`,
    );
    await conversation.close();
  });
});
