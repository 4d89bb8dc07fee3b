// The one place a provider and a model are picked. The environment comes in as an argument: the CLI and
// `startAgent({ llm: 'auto' })` pass `process.env`; nothing here reads it.
import { AgoraError } from '../errors.js';
import type { LanguageModel } from './model.js';
import { setting, type LlmEnvironment, type ProviderSettings } from './provider.js';
import { PROVIDERS, type LlmProvider } from './providers.js';

export type { LlmEnvironment, LlmProvider };
export { hasAnthropicKey } from './anthropic/provider.js';

/**
 * The providers the framework speaks to: the Anthropic Messages API, OpenAI-compatible Chat Completions, and the
 * offline demo model (scripted, no key: only when named, never picked from the environment's keys).
 */
export const LLM_PROVIDERS: readonly LlmProvider[] = PROVIDERS.map((provider) => provider.name);

/** What the caller decided (or the CLI's `--llm`, `--model`, `--llm-base-url`); the environment fills the rest. */
export type ChooseModelOptions = ProviderSettings & {
  /** The provider (else AGORA_LLM, else the first whose key or server is set, Anthropic first). */
  provider?: LlmProvider;
};

/** The provider and model a call of {@link chooseModel} settles on, for banners and metrics. */
export type ModelChoice = { provider: string; model: string };

/** Whether `name` is one of {@link LLM_PROVIDERS}. */
export function isLlmProvider(name: string): name is LlmProvider {
  return (LLM_PROVIDERS as readonly string[]).includes(name);
}

// The provider: as given, else AGORA_LLM, else the first the environment holds a key (or a server) for.
function providerOf(options: ChooseModelOptions, env: LlmEnvironment): LlmProvider | undefined {
  if (options.provider) return options.provider;
  const named = setting(env.AGORA_LLM)?.toLowerCase();
  if (named !== undefined) {
    if (!isLlmProvider(named))
      throw new AgoraError(
        'INVALID_ARGUMENT',
        `AGORA_LLM must be one of ${LLM_PROVIDERS.join(', ')}, got ${JSON.stringify(named)}`,
      );
    return named;
  }
  return PROVIDERS.find((provider) => provider.configured?.(env) === true)?.name;
}

/**
 * The LLM the options and `env` configure, or `undefined` when none is: no provider named and no key set. A
 * provider named without a key or a base URL is an error naming what is missing. No SDK is loaded here.
 * @example const llm = chooseModel({ provider: 'openai', baseUrl: 'http://localhost:11434/v1' }, process.env);
 */
export function chooseModel(options: ChooseModelOptions, env: LlmEnvironment): LanguageModel | undefined {
  const name = providerOf(options, env);
  if (name === undefined) return undefined;
  const provider = PROVIDERS.find((candidate) => candidate.name === name)!;
  const { provider: _provider, ...settings } = options;
  return provider.create({ ...settings, model: setting(options.model) ?? setting(env.AGORA_MODEL) }, env);
}

/** The provider and model an LLM answers with (`custom` for a model of the user's own), or undefined without one. */
export function describeModel(llm: LanguageModel | undefined): ModelChoice | undefined {
  return llm ? { provider: llm.provider ?? 'custom', model: llm.model } : undefined;
}

/**
 * The LLM `agora serve` configured before providers could be chosen: kept for callers of the earlier API; it is
 * {@link chooseModel} with the environment given.
 * @example const llm = modelFromEnvironment(process.env); // undefined without a key
 */
export function modelFromEnvironment(env: LlmEnvironment, model?: string): LanguageModel | undefined {
  return chooseModel({ model }, env);
}

/** The default model of each provider. */
export const DEFAULT_MODELS = Object.fromEntries(
  PROVIDERS.map((provider) => [provider.name, provider.defaultModel]),
) as Record<LlmProvider, string>;
