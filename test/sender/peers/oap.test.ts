import { createServer } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { OapClient, oapEnvelope, readOapReply } from '../../../src/sender/peers/oap.js';
import { oapTaskEnvelopeSent } from '../../helpers/oap-schema.js';

describe('OapClient', () => {
  const received: unknown[] = [];
  let reply: { status: number; body: unknown } = { status: 200, body: {} };
  const server = createServer((request, response) => {
    const send = (status: number, value: unknown) => void response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    if (request.method === 'GET' && request.url === '/') return send(200, { agent_id: 'planner', description: 'Plans trips.', capabilities: ['itinerary', 'travel'] });
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      received.push(JSON.parse(text));
      send(reply.status, reply.body);
    });
  });
  const url = new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as { port: number }).port}`)));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('discovers an agent from GET /', async () => {
    expect(await new OapClient().discover(await url)).toEqual({ agentId: 'planner', description: 'Plans trips.', capabilities: ['itinerary', 'travel'] });
  });

  it("sends a full TaskEnvelope OAP's schema accepts, and reads result over memory.last_result, and the handoff with its reason", async () => {
    reply = { status: 200, body: { result: 'mine', memory: { last_result: 'the previous hop' }, steps_taken: ['a', 'planner'], handoff: { next_agent: 'writer', reason: 'needs prose' } } };
    const envelope = oapEnvelope({ id: 'run-1', goal: 'plan a trip', input: { from: 'earlier' }, stepsTaken: ['a'] });
    const answer = await new OapClient().invoke(await url, envelope);
    expect(oapTaskEnvelopeSent.parse(received.at(-1))).toEqual({ id: 'run-1', version: '0.3', goal: 'plan a trip', constraints: {}, memory: { last_result: { from: 'earlier' } }, steps_taken: ['a'], handoff: null });
    expect(answer).toMatchObject({ result: 'mine', handoff: { next_agent: 'writer', reason: 'needs prose' }, stepsTaken: ['a', 'planner'] });
  });

  it('falls back to memory.last_result, and names an HTTP failure without the agent\'s text', async () => {
    expect(readOapReply({ memory: { last_result: 42 } }, 'x').result).toBe(42);
    expect(readOapReply({ result: null, memory: { last_result: 42 } }, 'x').result).toBe(42);
    expect(() => readOapReply([1], 'POST u')).toThrow(/POST u: not an OAP envelope/);
    reply = { status: 500, body: { error: 'planner_down', detail: 'secret internals' } };
    const failure = new OapClient().invoke(await url, oapEnvelope({ goal: 'x' }));
    await expect(failure).rejects.toThrow(/^POST http:\/\/127\.0\.0\.1:\d+\/invoke: HTTP 500 \(planner_down\)$/);
  });
});
