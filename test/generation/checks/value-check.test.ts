import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/log.js';
import { bundleForQuickJS } from '../../../src/generation/sandbox/quickjs-bundle.js';
import { QuickJSSandbox, type SandboxContext } from '../../../src/generation/sandbox/quickjs.js';
import {
  askTwice,
  checkProbeValues,
  type ProbeOutcome,
  type ValueProbe,
} from '../../../src/generation/checks/value-check.js';
import type { JsonValue } from '../../../src/schemas.js';

// A routine that learned its one recorded example by heart: right on 10 km, wrong on anything else.
const OVERFITTED = `import { z } from 'zod';
import { defineRoutine } from 'agora-agents';
export default defineRoutine({
  input: z.object({ value: z.number(), from: z.literal('km'), to: z.literal('mi') }),
  output: z.object({ value: z.number(), unit: z.string() }),
  handle: ({ value }) => ({ value: value === 10 ? 6.21371 : value * 1.60934, unit: 'mi' }),
});
`;
const CORRECT = OVERFITTED.replace('value === 10 ? 6.21371 : value * 1.60934', 'value / 1.609344');

const opened: QuickJSSandbox[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((module) => module.close()));
});

async function outcomes(code: string, probes: readonly ValueProbe[]): Promise<ProbeOutcome[]> {
  const module = new QuickJSSandbox(await bundleForQuickJS(code), { name: 'candidate' });
  opened.push(module);
  const context = (): SandboxContext => ({
    conversation: { id: null, turn: 1, state: {} },
    protocol: { name: 'Units', hash: 'h', metadata: { name: 'Units' } as SandboxContext['protocol']['metadata'] },
    tools: {},
    logger: silentLogger,
  });
  const results: ProbeOutcome[] = [];
  for (const probe of probes) {
    results.push(
      await module.run('handle', probe.body, context()).then(
        (result) => ({ reply: result.value }),
        (error: Error) => ({ error: error.message }),
      ),
    );
  }
  return results;
}

// The LLM responder, asked twice: a conversion is deterministic (rounded as an LLM writes it), a quote id is not.
function responder(): (body: JsonValue) => Promise<JsonValue> {
  let asked = 0;
  return async (body): Promise<JsonValue> => {
    asked++;
    const { value, quote } = body as { value: number; quote?: boolean };
    if (quote) return { quoteId: `q-${asked}`, value: Math.round((value / 1.609344) * 100) / 100 };
    return { value: Math.round((value / 1.609344) * 100000) / 100000, unit: 'mi' };
  };
}

describe('checkProbeValues', () => {
  it('refuses a routine that matches the recorded example but is wrong on a new input', async () => {
    const recorded: ValueProbe = {
      body: { value: 10, from: 'km', to: 'mi' },
      answers: [
        { value: 6.21371, unit: 'mi' },
        { value: 6.21371, unit: 'mi' },
      ],
    };
    const probes = await askTwice(
      [
        { value: 42, from: 'km', to: 'mi' },
        { value: 5, from: 'km', to: 'mi' },
      ],
      responder(),
    );
    expect(probes.map((probe) => probe.answers[0])).toEqual([
      { value: 26.09759, unit: 'mi' },
      { value: 3.10686, unit: 'mi' },
    ]);

    const onRecorded = checkProbeValues([recorded], await outcomes(OVERFITTED, [recorded]));
    expect(onRecorded).toEqual({ mismatches: [], byValue: 1, byShape: 0 });
    const report = checkProbeValues(probes, await outcomes(OVERFITTED, probes));
    expect(report.byValue).toBe(0);
    expect(report.mismatches).toEqual([
      'test query 1: body {"value":42,"from":"km","to":"mi"}: the routine replied {"value":67.59228,"unit":"mi"} but the LLM answered {"value":26.09759,"unit":"mi"} both times it was asked',
      'test query 2: body {"value":5,"from":"km","to":"mi"}: the routine replied {"value":8.0467,"unit":"mi"} but the LLM answered {"value":3.10686,"unit":"mi"} both times it was asked',
    ]);
  });

  it('approves the correct routine, whose unrounded numbers round to the LLM answers', async () => {
    const probes = await askTwice(
      [
        { value: 42, from: 'km', to: 'mi' },
        { value: 5, from: 'km', to: 'mi' },
      ],
      responder(),
    );
    expect(checkProbeValues(probes, await outcomes(CORRECT, probes))).toEqual({
      mismatches: [],
      byValue: 2,
      byShape: 0,
    });
  });

  it('compares a probe whose two LLM answers differ by shape only', () => {
    const probe: ValueProbe = {
      body: { value: 5, quote: true },
      answers: [
        { quoteId: 'q-1', value: 3.11 },
        { quoteId: 'q-2', value: 3.11 },
      ],
    };
    expect(checkProbeValues([probe], [{ reply: { quoteId: 'anything', value: 999 } }])).toEqual({
      mismatches: [],
      byValue: 0,
      byShape: 1,
    });
    const wrongShape = checkProbeValues([probe], [{ reply: { id: 'x', value: 3.11 } }]);
    expect(wrongShape.mismatches).toEqual([
      'test query 1: body {"value":5,"quote":true}: the routine replied {"id":"x","value":3.11}, with keys [id, value], where [quoteId, value] were expected, as in {"quoteId":"q-1","value":3.11} (the LLM\'s answers differ between two asks, so only the shape is compared)',
    ]);
  });

  it('holds whole numbers and text to their exact value, and reports failures', () => {
    const probe = (answer: JsonValue): ValueProbe => ({ body: 'b', answers: [answer, answer] });
    expect(checkProbeValues([probe({ count: 3 })], [{ reply: { count: 3.4 } }]).mismatches).toHaveLength(1);
    expect(checkProbeValues([probe(6.2)], [{ reply: 6.24 }]).mismatches).toHaveLength(0);
    expect(checkProbeValues([probe(6.2)], [{ reply: 6.3 }]).mismatches).toHaveLength(1);
    expect(checkProbeValues([probe('Table  for two\n')], [{ reply: 'Table for two' }]).byValue).toBe(1);
    expect(checkProbeValues([probe('Table for two')], [{ reply: 'Table for three' }]).mismatches).toHaveLength(1);
    expect(checkProbeValues([probe({ a: [1, 2] })], [{ reply: { a: [1, 2], extra: true } }]).mismatches).toHaveLength(
      1,
    );
    expect(checkProbeValues([probe(1)], [{ error: 'candidate: boom' }]).mismatches).toEqual([
      'test query 1: body "b": the routine failed: candidate: boom',
    ]);
  });

  it('leaves out a body the responder could not answer twice', async () => {
    const skipped: JsonValue[] = [];
    const probes = await askTwice(
      [1, 2],
      async (body) => (body === 2 ? Promise.reject(new Error('LLM down')) : 'one'),
      (body) => skipped.push(body),
    );
    expect(probes).toEqual([{ body: 1, answers: ['one', 'one'] }]);
    expect(skipped).toEqual([2]);
  });
});
