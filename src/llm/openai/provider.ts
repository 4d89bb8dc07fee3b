// OpenAI-compatible Chat Completions as a provider of `../providers.ts`: OpenAI, or a local server (Ollama, vLLM…).
import { AgoraError } from '../../errors.js';
import { defineProvider, setting } from '../provider.js';
import { DEFAULT_OPENAI_MODEL, OpenAIModel } from './model.js';

/** `--llm openai`: OPENAI_API_KEY, or a base URL (OPENAI_BASE_URL) for a local server that needs no key. */
export const openaiProvider = defineProvider({
  name: 'openai',
  env: ['OPENAI_API_KEY', 'OPENAI_BASE_URL'],
  baseUrlEnv: 'OPENAI_BASE_URL',
  defaultModel: DEFAULT_OPENAI_MODEL,
  configured: (env) => Boolean(setting(env.OPENAI_API_KEY) || setting(env.OPENAI_BASE_URL)),
  create({ apiKey: givenKey, baseUrl, ...rest }, env) {
    const apiKey = setting(givenKey) ?? setting(env.OPENAI_API_KEY);
    const baseURL = setting(baseUrl) ?? setting(env.OPENAI_BASE_URL);
    // A local server (Ollama, vLLM, LM Studio) needs no key, only its address.
    if (!apiKey && !baseURL)
      throw new AgoraError(
        'INVALID_ARGUMENT',
        'The openai provider needs OPENAI_API_KEY, or a base URL (--llm-base-url, OPENAI_BASE_URL) for a local server',
      );
    return new OpenAIModel({ ...rest, apiKey, baseURL });
  },
});
