import { createServer } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { OapClient, readOapReply } from '../../../src/bindings/oap/client.js';
import { MAX_STEP_RESULT_CHARS, oapEnvelope, oapStep } from '../../../src/bindings/oap/envelope.js';
import { oapTaskEnvelope, oapTaskEnvelopeSent } from '../../helpers/oap-schema.js';

describe('OapClient', () => {
  const received: unknown[] = [];
  let reply: { status: number; body: unknown } = { status: 200, body: {} };
  const server = createServer((request, response) => {
    const send = (status: number, value: unknown) =>
      void response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
    if (request.method === 'GET' && request.url === '/')
      return send(200, { agent_id: 'planner', description: 'Plans trips.', capabilities: ['itinerary', 'travel'] });
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      received.push(JSON.parse(text));
      send(reply.status, reply.body);
    });
  });
  const url = new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as { port: number }).port}`)),
  );
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('discovers an agent from GET /', async () => {
    expect(await new OapClient().discover(await url)).toEqual({
      agentId: 'planner',
      description: 'Plans trips.',
      capabilities: ['itinerary', 'travel'],
    });
  });

  it("sends a full TaskEnvelope OAP's model accepts: Step objects in steps_taken, OAP's envelope version", async () => {
    const scout = {
      agent_id: 'scout',
      action: 'handed off',
      result: { destinations: ['Lyon'] },
      timestamp: '2026-04-20T10:00:00.000Z',
    };
    reply = {
      status: 200,
      body: {
        result: 'mine',
        memory: { last_result: 'the previous hop' },
        steps_taken: [
          scout,
          {
            agent_id: 'planner',
            action: 'answered',
            result: 'mine',
            timestamp: '2026-04-20T10:00:01.123456Z',
            note: 'kept',
          },
        ],
        handoff: { next_agent: 'writer', reason: 'needs prose' },
      },
    };
    // Our earlier versions passed agent names: they are written as Steps too (no time known, so none claimed).
    const envelope = oapEnvelope({
      id: 'run-1',
      goal: 'plan a trip',
      input: { from: 'earlier' },
      stepsTaken: ['a', scout],
    });
    const answer = await new OapClient().invoke(await url, envelope);
    // oap/envelope.py: TaskEnvelope.version defaults to "0.1", what OAP's own clients send.
    const sent = oapTaskEnvelope.required().parse(received.at(-1));
    expect(sent).toEqual({
      id: 'run-1',
      version: '0.1',
      goal: 'plan a trip',
      constraints: {},
      memory: { last_result: { from: 'earlier' } },
      steps_taken: [{ agent_id: 'a', action: 'answered', result: null }, scout],
      handoff: null,
    });
    expect(answer).toMatchObject({ result: 'mine', handoff: { next_agent: 'writer', reason: 'needs prose' } });
    expect(answer.stepsTaken).toEqual([
      scout,
      {
        agent_id: 'planner',
        action: 'answered',
        result: 'mine',
        timestamp: '2026-04-20T10:00:01.123456Z',
        note: 'kept',
      },
    ]);
  });

  it('reads steps as Steps or bare agent names, and leaves out what is neither', () => {
    const steps = readOapReply(
      {
        steps_taken: [
          'old-peer',
          { agent_id: 'x', action: 'y' },
          5,
          { agent_id: 'z' },
          { agent_id: 'w', action: 'v', timestamp: 'yesterday' },
        ],
      },
      'x',
    ).stepsTaken;
    expect(steps).toEqual([
      { agent_id: 'old-peer', action: 'answered', result: null },
      { agent_id: 'x', action: 'y' },
    ]);
    // A step result nested past the stack's depth is read, not walked (a hostile peer cannot crash the reader).
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) as unknown;
    expect(readOapReply({ steps_taken: [{ agent_id: 'x', action: 'y', result: deep }] }, 'x').stepsTaken).toHaveLength(
      1,
    );
    expect(oapStep('x', 'answered', deep as never, 0).result).toEqual({ truncated: true, preview: '' });
  });

  it('writes a Step with an ISO 8601 UTC timestamp, and a bounded result', () => {
    const at = Date.UTC(2026, 3, 20, 10, 0, 0, 5);
    expect(
      oapTaskEnvelopeSent.parse(
        oapEnvelope({ goal: 'g', stepsTaken: [oapStep('scout', 'answered', { ok: true }, at)] }),
      ).steps_taken,
    ).toEqual([{ agent_id: 'scout', action: 'answered', result: { ok: true }, timestamp: '2026-04-20T10:00:00.005Z' }]);
    const long = 'x'.repeat(MAX_STEP_RESULT_CHARS + 1);
    expect(oapStep('scout', 'answered', long, at).result).toEqual({ truncated: true, preview: 'x'.repeat(500) });
    expect(oapStep('scout', 'answered', { text: long }, at).result).toEqual({
      truncated: true,
      preview: `{"text":"${'x'.repeat(491)}`,
    });
    expect(oapStep('scout', 'answered', 'x'.repeat(MAX_STEP_RESULT_CHARS - 2), at).result).toBe(
      'x'.repeat(MAX_STEP_RESULT_CHARS - 2),
    );
  });

  it("falls back to memory.last_result, and names an HTTP failure without the agent's text", async () => {
    expect(readOapReply({ memory: { last_result: 42 } }, 'x').result).toBe(42);
    expect(readOapReply({ result: null, memory: { last_result: 42 } }, 'x').result).toBe(42);
    expect(() => readOapReply([1], 'POST u')).toThrow(/POST u: not an OAP envelope/);
    reply = { status: 500, body: { error: 'planner_down', detail: 'secret internals' } };
    const failure = new OapClient().invoke(await url, oapEnvelope({ goal: 'x' }));
    await expect(failure).rejects.toThrow(/^POST http:\/\/127\.0\.0\.1:\d+\/invoke: HTTP 500 \(planner_down\)$/);
  });
});
