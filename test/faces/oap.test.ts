import { describe, expect, it } from 'vitest';
import { fakeReceiver, makeFaces, PROTOCOL_HASH } from './_helpers.js';

const call = async (faces: ReturnType<typeof makeFaces>, method: string, path: string, body?: unknown) => {
  const response = (await faces.handle({ method, path, headers: {}, body: body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)) }))!;
  return { status: response.status, json: JSON.parse(response.body as string) as Record<string, any> };
};

describe('OAP face', () => {
  it('answers GET / with what `oap register` reads', async () => {
    const { json } = await call(makeFaces(), 'GET', '/');
    expect(json).toEqual({ agent_id: 'Test agent', capabilities: expect.arrayContaining(['unit', 'conversion', 'converts', 'value', 'units']), description: 'Converts units.', status: 'ok' });
    expect(await makeFaces().handle({ method: 'POST', path: '/', headers: {}, body: Buffer.from('{}') })).toBeUndefined();
  });

  it('invokes the goal as natural language, or memory.agora as a protocol query, keeping unknown fields', async () => {
    const receiver = fakeReceiver();
    const faces = makeFaces({}, receiver);
    const envelope = { id: 'e1', goal: 'convert 10 km', memory: { note: 1 }, steps: [{ agent: 'before' }], constraints: {}, handoff: null, extra: 'kept' };
    const natural = await call(faces, 'POST', '/invoke', envelope);
    expect(natural.json).toMatchObject({ id: 'e1', extra: 'kept', memory: { note: 1, last_result: 'turn 1: convert 10 km' } });
    expect(natural.json.steps).toHaveLength(2);
    expect(natural.json.steps[1]).toMatchObject({ agent: 'Test agent', path: 'llm', status: 'ok' });
    const protocol = await call(faces, 'POST', '/invoke', { ...envelope, memory: { agora: { protocolHash: PROTOCOL_HASH, body: { value: 10 } } } });
    expect(protocol.json.memory.last_result).toEqual({ converted: true, input: { value: 10 } });
    expect(protocol.json.steps[1].path).toBe('protocol');
  });

  it('refuses malformed envelopes with its error shape', async () => {
    const faces = makeFaces();
    expect((await call(faces, 'POST', '/invoke', '{')).status).toBe(400);
    expect((await call(faces, 'POST', '/invoke', { goal: 5 })).status).toBe(422);
    expect((await call(faces, 'POST', '/invoke', { goal: 'x', steps: {} })).json).toEqual({ error: 'invalid_envelope', detail: 'steps must be an array' });
    expect((await call(faces, 'GET', '/invoke')).status).toBe(405);
  });
});
