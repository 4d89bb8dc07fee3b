import { describe, expect, it } from 'vitest';
import { AgoraError } from '../../src/errors.js';
import {
  answerNaturalLanguage,
  answerUnderProtocol,
  extractJson,
  judgeSuitability,
  prescribesJson,
  type ResponderCall,
} from '../../src/llm/peer-answers.js';
import { parseDocument } from '../../src/protocol/document.js';
import { delimit } from '../../src/llm/budget.js';
import { scriptedModel, type ScriptedReply } from '../../src/testing/index.js';

const jsonDocument = parseDocument(
  '---\nname: Weather\ndescription: Forecasts.\nmultiround: false\n---\nReply with JSON {"weather": string}.\n',
);
const textDocument = parseDocument(
  '---\nname: Greeting\ndescription: Greets.\nmultiround: false\n---\nReply with a greeting.\n',
);

function call(replies: ScriptedReply[]): ResponderCall & { model: ReturnType<typeof scriptedModel> } {
  return {
    model: scriptedModel(replies),
    profile: {
      name: 'Tester',
      description: 'Answers tests.',
      protocols: [{ name: 'Weather', description: 'Forecasts' }],
      tools: [],
    },
  };
}

describe('peer answers', () => {
  it('answers natural language with the history as it was, an empty body included (providers adapt it to their wire)', async () => {
    const responder = call(['  Sunny.  ']);
    expect(
      await answerNaturalLanguage(
        responder,
        [
          { role: 'agent', body: 'earlier reply' },
          { role: 'peer', body: { city: 'Paris' } },
          { role: 'agent', body: 'ok' },
        ],
        '',
      ),
    ).toBe('Sunny.');
    const request = responder.model.requests[0]!;
    expect(request.system).toContain('You are Tester');
    expect(request.system).toContain('- Weather: Forecasts');
    expect(request.messages).toEqual([
      { role: 'assistant', content: 'earlier reply' },
      { role: 'user', content: '{"city":"Paris"}' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: '' },
    ]);
  });

  it('tells JSON protocols apart and reads JSON out of prose and fences', () => {
    expect(prescribesJson(jsonDocument)).toBe(true);
    expect(prescribesJson(textDocument)).toBe(false);
    expect(extractJson('```json\n{"a": 1}\n```')).toEqual({ ok: true, value: { a: 1 } });
    expect(extractJson('Here: {"a": [2]} done')).toEqual({ ok: true, value: { a: [2] } });
    expect(extractJson('no json here').ok).toBe(false);
  });

  it('answers under a JSON protocol, repairing one bad reply', async () => {
    const responder = call(['It is sunny!', '{"weather": "sunny"}']);
    expect(await answerUnderProtocol(responder, jsonDocument, [], { city: 'Paris' })).toEqual({ weather: 'sunny' });
    expect(responder.model.requests).toHaveLength(2);
    expect(responder.model.requests[0]!.system).toContain(jsonDocument.text.trim());
    expect(String(responder.model.requests[1]!.messages.at(-1)!.content)).toMatch(/^Your reply is not valid JSON/);
  });

  it('fails with the fixed LLM_UNAVAILABLE text after a second bad JSON reply, and returns text protocols as is', async () => {
    const error = await answerUnderProtocol(call(['nope', 'still nope']), jsonDocument, [], {}).catch(
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(AgoraError);
    expect(error).toMatchObject({ code: 'LLM_UNAVAILABLE', message: 'LLM unavailable' });
    expect(await answerUnderProtocol(call([' Hello there ']), textDocument, [], 'hi')).toBe('Hello there');
  });

  it('judges suitability from the last line', async () => {
    expect(await judgeSuitability(call(['I have a forecast tool.\nYES']), jsonDocument)).toEqual({
      suitable: true,
      reason: 'I have a forecast tool.\nYES',
    });
    expect((await judgeSuitability(call(['No tool for this.\nNO']), jsonDocument)).suitable).toBe(false);
  });
});

describe('responder budget (issue 11, finding 4)', () => {
  it('refuses a call over its character budget without making it', async () => {
    const responder = { ...call(['never']), maxChars: 1000 };
    await expect(answerNaturalLanguage(responder, [], 'z'.repeat(1000))).rejects.toMatchObject({
      code: 'REQUEST_TOO_LARGE',
      message: 'Request too large',
    });
    await expect(answerUnderProtocol(responder, jsonDocument, [], { text: 'z'.repeat(1000) })).rejects.toMatchObject({
      code: 'REQUEST_TOO_LARGE',
    });
    const big = parseDocument(`---\nname: Big\ndescription: x\nmultiround: false\n---\n${'z'.repeat(1000)}\n`);
    await expect(judgeSuitability(responder, big)).rejects.toMatchObject({
      code: 'UNSUPPORTED_PROTOCOL',
      message: 'Unsupported protocol',
    });
    expect(responder.model.requests).toHaveLength(0);
  });

  it('drops the oldest history by size to fit the budget', async () => {
    const responder = { ...call(['ok']), maxChars: 2000 };
    const history = [
      { role: 'peer' as const, body: 'a'.repeat(600) },
      { role: 'agent' as const, body: 'b'.repeat(600) },
      { role: 'peer' as const, body: 'c'.repeat(300) },
      { role: 'agent' as const, body: 'd'.repeat(300) },
    ];
    await answerNaturalLanguage(responder, history, 'e'.repeat(100));
    const contents = responder.model.requests[0]!.messages.map((message) => String(message.content)[0]);
    // 'a' does not fit; 'b' (our reply) opens what is left, which the Anthropic mapping drops at its wire.
    expect(contents).toEqual(['b', 'c', 'd', 'e']);
  });

  it("neutralizes a closing delimiter inside a peer's document", () => {
    expect(delimit('protocol', 'a</protocol>b</ PROTOCOL >c')).toBe(
      '<protocol>\na<\\/protocol>b<\\/protocol>c\n</protocol>',
    );
  });
});
