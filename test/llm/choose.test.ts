import { describe, expect, it } from 'vitest';
import { AgoraError } from '../../src/errors.js';
import { AnthropicModel, DEFAULT_MODEL } from '../../src/llm/anthropic/model.js';
import { chooseModel, describeModel } from '../../src/llm/choose.js';
import { DEFAULT_OPENAI_MODEL, OpenAIModel } from '../../src/llm/openai/model.js';
import { FakeOpenAI } from '../../src/testing/index.js';

describe('chooseModel', () => {
  it('chooses nothing without a provider named or a key set (blank values count as unset)', () => {
    expect(chooseModel({}, {})).toBeUndefined();
    expect(chooseModel({}, { ANTHROPIC_API_KEY: ' ', OPENAI_API_KEY: '' })).toBeUndefined();
  });

  it('chooses the provider whose key is set, Anthropic first, with AGORA_MODEL or the default model', () => {
    expect(describeModel(chooseModel({}, { ANTHROPIC_API_KEY: 'a', OPENAI_API_KEY: 'o' }))).toEqual({
      provider: 'anthropic',
      model: DEFAULT_MODEL,
    });
    expect(describeModel(chooseModel({}, { OPENAI_API_KEY: 'o' }))).toEqual({
      provider: 'openai',
      model: DEFAULT_OPENAI_MODEL,
    });
    expect(
      describeModel(chooseModel({}, { OPENAI_BASE_URL: 'http://localhost:11434/v1', AGORA_MODEL: 'llama3.2' })),
    ).toEqual({ provider: 'openai', model: 'llama3.2' });
    expect(chooseModel({}, { ANTHROPIC_AUTH_TOKEN: 't' })).toBeInstanceOf(AnthropicModel);
  });

  it('lets AGORA_LLM pick the provider, and the options (the CLI flags) win over the environment', () => {
    const env = { ANTHROPIC_API_KEY: 'a', OPENAI_API_KEY: 'o', AGORA_LLM: 'openai', AGORA_MODEL: 'from-env' };
    expect(describeModel(chooseModel({}, env))).toEqual({ provider: 'openai', model: 'from-env' });
    expect(describeModel(chooseModel({ provider: 'anthropic', model: 'claude-x' }, env))).toEqual({
      provider: 'anthropic',
      model: 'claude-x',
    });
    expect(chooseModel({ provider: 'openai', baseUrl: 'http://127.0.0.1:9/v1' }, {})).toBeInstanceOf(OpenAIModel);
  });

  it('names what is missing when a provider is named without a key or a server', () => {
    expect(() => chooseModel({ provider: 'anthropic' }, {})).toThrow(/anthropic provider needs ANTHROPIC_API_KEY/);
    expect(() => chooseModel({}, { AGORA_LLM: 'openai' })).toThrow(
      /openai provider needs OPENAI_API_KEY, or a base URL/,
    );
    const error = (() => {
      try {
        chooseModel({}, { AGORA_LLM: 'gemini' });
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(error).toBeInstanceOf(AgoraError);
    expect(error).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: 'AGORA_LLM must be one of anthropic, openai, offline, got "gemini"',
    });
  });

  it('points the OpenAI model at the base URL and key it chose, with no key needed for a local server', async () => {
    const fake = await FakeOpenAI.start({ replies: ['from the local server'] });
    try {
      const model = chooseModel({ provider: 'openai', baseUrl: fake.url, model: 'llama3.2', maxRetries: 0 }, {})!;
      expect((await model.complete({ system: 'Be brief.', messages: [{ role: 'user', content: 'Hi' }] })).text).toBe(
        'from the local server',
      );
      expect(fake.requests[0]!.body).toMatchObject({
        model: 'llama3.2',
        max_tokens: 4096,
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Hi' },
        ],
      });
      expect(fake.requests[0]!.apiKey).toBe('none');
    } finally {
      await fake.close();
    }
  });
});
