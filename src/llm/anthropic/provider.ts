// The Anthropic Messages API as a provider of `../providers.ts`: its variables, its default model, its model.
import { AgoraError } from '../../errors.js';
import { defineProvider, setting, type LlmEnvironment } from '../provider.js';
import { AnthropicModel, DEFAULT_MODEL } from './model.js';

/** True when an Anthropic credential is configured in `env` (ANTHROPIC_API_KEY, or ANTHROPIC_AUTH_TOKEN). */
export function hasAnthropicKey(env: LlmEnvironment): boolean {
  // ANTHROPIC_AUTH_TOKEN counts too: the SDK authenticates with it when no key is set.
  return Boolean(setting(env.ANTHROPIC_API_KEY) || setting(env.ANTHROPIC_AUTH_TOKEN));
}

/** `--llm anthropic`: Claude, with ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) and optionally ANTHROPIC_BASE_URL. */
export const anthropicProvider = defineProvider({
  name: 'anthropic',
  env: ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_BASE_URL'],
  baseUrlEnv: 'ANTHROPIC_BASE_URL',
  defaultModel: DEFAULT_MODEL,
  configured: hasAnthropicKey,
  create({ apiKey: givenKey, baseUrl, ...rest }, env) {
    const apiKey = setting(givenKey) ?? setting(env.ANTHROPIC_API_KEY);
    const authToken = setting(env.ANTHROPIC_AUTH_TOKEN);
    if (!apiKey && !authToken)
      throw new AgoraError(
        'INVALID_ARGUMENT',
        'The anthropic provider needs ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)',
      );
    return new AnthropicModel({
      ...rest,
      ...(apiKey ? { apiKey } : { authToken }),
      baseURL: setting(baseUrl) ?? setting(env.ANTHROPIC_BASE_URL),
    });
  },
});
