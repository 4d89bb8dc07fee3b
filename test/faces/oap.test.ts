import { describe, expect, it } from 'vitest';
import type { ReceiverApi } from '../../src/receiver.js';
import { oapTaskEnvelope } from './_peer-schemas.js';
import { fakeReceiver, makeFaces, PROTOCOL_HASH } from './_helpers.js';

const call = async (faces: ReturnType<typeof makeFaces>, method: string, path: string, body?: unknown) => {
  const response = (await faces.handle({ method, path, headers: {}, body: body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)) }))!;
  return { status: response.status, json: JSON.parse(response.body as string) as Record<string, any> };
};

/** An envelope as OAP's `TaskEnvelope(goal=…)` serializes it. */
const envelopeOf = (goal: string, extra: Record<string, unknown> = {}) => ({ id: 'e1', version: '0.3', goal, memory: {}, steps_taken: [], constraints: {}, handoff: null, ...extra });

describe('OAP face', () => {
  it('answers GET / with what `oap register` reads', async () => {
    const { json } = await call(makeFaces(), 'GET', '/');
    expect(json).toEqual({ agent_id: 'Test agent', capabilities: expect.arrayContaining(['unit', 'conversion', 'converts', 'value', 'units']), description: 'Converts units.', status: 'ok' });
    expect(await makeFaces().handle({ method: 'POST', path: '/', headers: {}, body: Buffer.from('{}') })).toBeUndefined();
  });

  it('invokes the goal as natural language, or memory.agora as a protocol query, appending itself to steps_taken', async () => {
    const faces = makeFaces({}, fakeReceiver());
    const natural = await call(faces, 'POST', '/invoke', envelopeOf('convert 10 km', { memory: { note: 1 }, steps_taken: ['before'] }));
    // Read as OAP reads it: a TaskEnvelope, unknown fields refused; no handoff, so the chain stops here.
    expect(oapTaskEnvelope.parse(natural.json)).toEqual({ ...envelopeOf('convert 10 km'), memory: { note: 1, last_result: 'turn 1: convert 10 km' }, steps_taken: ['before', 'Test agent'], handoff: null });
    const protocol = await call(faces, 'POST', '/invoke', envelopeOf('convert', { memory: { agora: { protocolHash: PROTOCOL_HASH, body: { value: 10 } } } }));
    expect(oapTaskEnvelope.parse(protocol.json).memory.last_result).toEqual({ converted: true, input: { value: 10 } });
    // Unknown fields come back as they came (a newer OAP's), and a failure is the step's result, not an HTTP error.
    const failed = await call(faces, 'POST', '/invoke', envelopeOf('x', { memory: { agora: { protocolHash: 'bad', body: 1 } }, extra: 'kept' }));
    expect(failed.json).toMatchObject({ extra: 'kept', memory: { last_result: { error: expect.any(String) } }, steps_taken: ['Test agent'], handoff: null });
  });

  it("ends an OAP chain that reached it by handoff: the incoming handoff is spent, not handed back to itself", async () => {
    const receiver = fakeReceiver();
    const faces = makeFaces({}, receiver);
    // OAP's `chain`: invoke the handoff's next agent until a reply sets no handoff, or max_hops.
    let envelope: Record<string, any> = envelopeOf('convert 10 km', { handoff: { next_agent: 'Test agent', reason: 'it converts units' } });
    let hops = 0;
    while (envelope.handoff?.next_agent === 'Test agent' && hops < 10) {
      envelope = oapTaskEnvelope.parse((await call(faces, 'POST', '/invoke', envelope)).json);
      hops += 1;
    }
    expect(hops).toBe(1);
    expect(receiver.queries).toHaveLength(1);
    expect(envelope.handoff).toBeNull();
    expect(envelope.steps_taken).toEqual(['Test agent']);
  });

  it('hands off when its answer names a next agent, always with a reason', async () => {
    const answers: unknown[] = [{ next_agent: 'summariser' }, { handoff: { next_agent: 'publisher', reason: 'the summary is ready' } }, { next_agent: '' }];
    const receiver: ReceiverApi = { ...fakeReceiver(), query: async () => ({ status: 'success', body: answers.shift() as never }) };
    const faces = makeFaces({}, receiver);
    const first = oapTaskEnvelope.parse((await call(faces, 'POST', '/invoke', envelopeOf('research'))).json);
    expect(first.handoff).toEqual({ next_agent: 'summariser', reason: 'Test agent handed the task on' });
    const second = oapTaskEnvelope.parse((await call(faces, 'POST', '/invoke', envelopeOf('research'))).json);
    expect(second.handoff).toEqual({ next_agent: 'publisher', reason: 'the summary is ready' });
    expect(oapTaskEnvelope.parse((await call(faces, 'POST', '/invoke', envelopeOf('research'))).json).handoff).toBeNull();
  });

  it('refuses malformed envelopes with its error shape', async () => {
    const faces = makeFaces();
    expect((await call(faces, 'POST', '/invoke', '{')).status).toBe(400);
    expect((await call(faces, 'POST', '/invoke', { goal: 5 })).status).toBe(422);
    expect((await call(faces, 'POST', '/invoke', { goal: 'x', steps_taken: {} })).json).toEqual({ error: 'invalid_envelope', detail: 'steps_taken must be an array' });
    expect((await call(faces, 'POST', '/invoke', { goal: 'x', handoff: 'me' })).json).toEqual({ error: 'invalid_envelope', detail: 'handoff must be an object' });
    expect((await call(faces, 'POST', '/invoke', 'nope')).status).toBe(400);
    expect((await call(faces, 'GET', '/invoke')).status).toBe(405);
  });
});
