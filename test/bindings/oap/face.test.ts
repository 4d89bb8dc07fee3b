import { describe, expect, it } from 'vitest';
import type { ReceiverApi } from '../../../src/receiver.js';
import { MAX_STEP_RESULT_CHARS } from '../../../src/bindings/oap/envelope.js';
import { oapStepWritten, oapTaskEnvelope } from '../../faces/_peer-schemas.js';
import { fakeReceiver, makeFaces, PROTOCOL_HASH } from '../../faces/_helpers.js';

const call = async (faces: ReturnType<typeof makeFaces>, method: string, path: string, body?: unknown) => {
  const response = (await faces.handle({
    method,
    path,
    headers: {},
    body: body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
  }))!;
  return { status: response.status, json: JSON.parse(response.body as string) as Record<string, any> };
};

/** An envelope as OAP's `TaskEnvelope(goal=…).model_dump(mode="json")` serializes it (oap/envelope.py, OAP's HTTPTransport). */
const envelopeOf = (goal: string, extra: Record<string, unknown> = {}) => ({
  id: 'e1',
  version: '0.1',
  goal,
  memory: {},
  steps_taken: [],
  constraints: { max_cost_usd: null, allowed_tools: null, deadline_ms: null },
  handoff: null,
  ...extra,
});

const NOW = Date.UTC(2026, 3, 20, 10, 0, 0, 5);
const clocked = (receiver: ReceiverApi = fakeReceiver()) => makeFaces({ now: () => NOW }, receiver);
/** The Step this agent appends, as OAP's model reads it. */
const ourStep = (action: string, result: unknown) => ({
  agent_id: 'Test agent',
  action,
  result,
  timestamp: '2026-04-20T10:00:00.005Z',
});

describe('OAP face', () => {
  it('answers GET / with what `oap register` reads', async () => {
    const { json } = await call(makeFaces(), 'GET', '/');
    expect(json).toEqual({
      agent_id: 'Test agent',
      capabilities: expect.arrayContaining(['unit', 'conversion', 'converts', 'value', 'units']),
      description: 'Converts units.',
      status: 'ok',
    });
    expect(
      await makeFaces().handle({ method: 'POST', path: '/', headers: {}, body: Buffer.from('{}') }),
    ).toBeUndefined();
  });

  it('invokes the goal as natural language, or memory.agora as a protocol query, appending its Step to steps_taken', async () => {
    const faces = clocked();
    // A step as OAP's router adds it (`add_step(agent_id, action=f"Routed to {agent_id}", result=agent_output)`).
    const routed = {
      agent_id: 'scout',
      action: 'Routed to scout',
      result: { found: ['Lyon'] },
      timestamp: '2026-04-20T09:59:58.123456Z',
    };
    const natural = await call(
      faces,
      'POST',
      '/invoke',
      envelopeOf('convert 10 km', { memory: { note: 1 }, steps_taken: [routed] }),
    );
    // Read as OAP reads it: a TaskEnvelope of Steps; no handoff, so the chain stops here.
    expect(oapTaskEnvelope.parse(natural.json)).toEqual({
      ...envelopeOf('convert 10 km'),
      memory: { note: 1, last_result: 'turn 1: convert 10 km' },
      steps_taken: [routed, ourStep('answered', 'turn 1: convert 10 km')],
      handoff: null,
    });
    expect(oapStepWritten.parse(natural.json.steps_taken[1])).toBeTruthy();
    const protocol = await call(
      faces,
      'POST',
      '/invoke',
      envelopeOf('convert', { memory: { agora: { protocolHash: PROTOCOL_HASH, body: { value: 10 } } } }),
    );
    expect(oapTaskEnvelope.parse(protocol.json).memory?.last_result).toEqual({ converted: true, input: { value: 10 } });
    // Unknown fields come back as they came (a newer OAP's), and a failure is the step's result, not an HTTP error.
    const failed = await call(
      faces,
      'POST',
      '/invoke',
      envelopeOf('x', { memory: { agora: { protocolHash: 'bad', body: 1 } }, extra: 'kept' }),
    );
    expect(failed.json).toMatchObject({
      extra: 'kept',
      memory: { last_result: { error: expect.any(String) } },
      steps_taken: [ourStep('failed', { error: expect.any(String) })],
      handoff: null,
    });
  });

  it('reads the bare agent names our earlier versions wrote as steps, and writes them back as Steps', async () => {
    const reply = await call(
      clocked(),
      'POST',
      '/invoke',
      envelopeOf('convert 10 km', { steps_taken: ['scout', { agent_id: 'planner', action: 'answered' }] }),
    );
    // No time is known for them, so none is claimed (OAP's model fills in its default).
    expect(oapTaskEnvelope.parse(reply.json).steps_taken).toEqual([
      { agent_id: 'scout', action: 'answered', result: null },
      { agent_id: 'planner', action: 'answered' },
      ourStep('answered', 'turn 1: convert 10 km'),
    ]);
  });

  it("bounds its Step's result; the whole answer is memory.last_result", async () => {
    const long = 'y'.repeat(MAX_STEP_RESULT_CHARS + 10);
    const receiver: ReceiverApi = { ...fakeReceiver(), query: async () => ({ status: 'success', body: long }) };
    const reply = oapTaskEnvelope.parse(
      (await call(clocked(receiver), 'POST', '/invoke', envelopeOf('write at length'))).json,
    );
    expect(reply.memory?.last_result).toBe(long);
    expect(reply.steps_taken?.at(-1)).toEqual(ourStep('answered', { truncated: true, preview: 'y'.repeat(500) }));
  });

  it('writes a null constraints (which OAP refuses) as none', async () => {
    const reply = await call(clocked(), 'POST', '/invoke', {
      goal: 'convert',
      constraints: null,
      memory: null,
      steps_taken: null,
    });
    expect(oapTaskEnvelope.parse(reply.json)).toEqual({
      goal: 'convert',
      constraints: {},
      memory: { last_result: 'turn 1: convert' },
      steps_taken: [ourStep('answered', 'turn 1: convert')],
      handoff: null,
    });
  });

  it('ends an OAP chain that reached it by handoff: the incoming handoff is spent, not handed back to itself', async () => {
    const receiver = fakeReceiver();
    const faces = makeFaces({}, receiver);
    // OAP's `chain`: invoke the handoff's next agent until a reply sets no handoff, or max_hops.
    let envelope: Record<string, any> = envelopeOf('convert 10 km', {
      handoff: { next_agent: 'Test agent', reason: 'it converts units' },
    });
    let hops = 0;
    while (envelope.handoff?.next_agent === 'Test agent' && hops < 10) {
      envelope = oapTaskEnvelope.parse((await call(faces, 'POST', '/invoke', envelope)).json);
      hops += 1;
    }
    expect(hops).toBe(1);
    expect(receiver.queries).toHaveLength(1);
    expect(envelope.handoff).toBeNull();
    expect(envelope.steps_taken).toMatchObject([{ agent_id: 'Test agent', action: 'answered' }]);
  });

  it('hands off when its answer names a next agent, always with a reason', async () => {
    const answers: unknown[] = [
      { next_agent: 'summariser' },
      { handoff: { next_agent: 'publisher', reason: 'the summary is ready' } },
      { next_agent: '' },
    ];
    const receiver: ReceiverApi = {
      ...fakeReceiver(),
      query: async () => ({ status: 'success', body: answers.shift() as never }),
    };
    const faces = clocked(receiver);
    const first = oapTaskEnvelope.parse((await call(faces, 'POST', '/invoke', envelopeOf('research'))).json);
    expect(first.handoff).toEqual({ next_agent: 'summariser', reason: 'Test agent handed the task on' });
    expect(first.steps_taken).toMatchObject([
      { agent_id: 'Test agent', action: 'handed off', result: { next_agent: 'summariser' } },
    ]);
    const second = oapTaskEnvelope.parse((await call(faces, 'POST', '/invoke', envelopeOf('research'))).json);
    expect(second.handoff).toEqual({ next_agent: 'publisher', reason: 'the summary is ready' });
    expect(
      oapTaskEnvelope.parse((await call(faces, 'POST', '/invoke', envelopeOf('research'))).json).handoff,
    ).toBeNull();
  });

  it('refuses malformed envelopes with its error shape', async () => {
    const faces = makeFaces();
    expect((await call(faces, 'POST', '/invoke', '{')).status).toBe(400);
    expect((await call(faces, 'POST', '/invoke', { goal: 5 })).status).toBe(422);
    expect((await call(faces, 'POST', '/invoke', { goal: 'x', steps_taken: {} })).json).toEqual({
      error: 'invalid_envelope',
      detail: 'steps_taken must be an array',
    });
    expect((await call(faces, 'POST', '/invoke', { goal: 'x', handoff: 'me' })).json).toEqual({
      error: 'invalid_envelope',
      detail: 'handoff must be an object',
    });
    // What OAP's TaskEnvelope refuses (oap/envelope.py, checked with its model_validate), refused here too.
    const refused = async (envelope: unknown) => {
      const reply = await call(faces, 'POST', '/invoke', envelope);
      return [reply.status, reply.json.error, reply.json.detail];
    };
    const step = { agent_id: 'a', action: 'b' };
    for (const steps of [
      [5],
      [{ agent_id: 'a' }],
      [{ ...step, agent_id: 5 }],
      [{ ...step, timestamp: 'yesterday' }],
      [{ ...step, timestamp: '2026-02-30' }],
      [{ ...step, timestamp: null }],
    ]) {
      expect(await refused({ goal: 'x', steps_taken: ['fine', ...steps] })).toEqual([
        422,
        'invalid_envelope',
        expect.stringMatching(/^steps_taken\[1\] must be a step/),
      ]);
    }
    expect(await refused({ goal: 'x', id: 5 })).toEqual([422, 'invalid_envelope', 'id must be a string']);
    expect(await refused({ goal: 'x', version: 0.1 })).toEqual([422, 'invalid_envelope', 'version must be a string']);
    expect(await refused({ goal: 'x', constraints: { deadline_ms: 5.5 } })).toEqual([
      422,
      'invalid_envelope',
      expect.stringMatching(/^constraints: /),
    ]);
    expect(await refused({ goal: 'x', constraints: { allowed_tools: 'search' } })).toEqual([
      422,
      'invalid_envelope',
      expect.stringMatching(/^constraints: /),
    ]);
    // Timestamps as pydantic reads them: with or without a zone, a space or `T`, a comma fraction.
    for (const timestamp of [
      '2026-01-02T03:04:05.678Z',
      '2026-01-02 03:04:05+02:00',
      '2026-01-02T03:04',
      '2026-01-02',
      '2024-02-29T00:00:00,5+0130',
    ]) {
      expect((await call(faces, 'POST', '/invoke', { goal: 'x', steps_taken: [{ ...step, timestamp }] })).status).toBe(
        200,
      );
    }
    expect((await call(faces, 'POST', '/invoke', 'nope')).status).toBe(400);
    expect((await call(faces, 'GET', '/invoke')).status).toBe(405);
  });
});
