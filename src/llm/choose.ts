// The one place a provider and a model are picked, and the one place the library reads the environment for them:
// every command, the receiver's and the sender's defaults go through `chooseModel`.
import { AgoraError } from '../errors.js';
import { AnthropicModel, DEFAULT_MODEL } from './anthropic/model.js';
import type { LanguageModel } from './model.js';
import { DEFAULT_OPENAI_MODEL, OpenAIModel } from './openai/model.js';
import { OFFLINE_MODEL_ID, OfflineModel } from './offline.js';
import type { RetryOptions } from './retry.js';

/**
 * The providers the framework speaks to: the Anthropic Messages API, OpenAI-compatible Chat Completions, and the
 * offline demo model (scripted, no key: only when named, never picked from the environment's keys).
 */
export const LLM_PROVIDERS = ['anthropic', 'openai', 'offline'] as const;

/** One of {@link LLM_PROVIDERS}. */
export type LlmProvider = (typeof LLM_PROVIDERS)[number];

/** What the caller decided (options, or the CLI's `--llm`, `--model`, `--llm-base-url`); the environment fills the rest. */
export type ChooseModelOptions = RetryOptions & {
  /** The provider (else AGORA_LLM, else the one whose key is set, Anthropic first). */
  provider?: LlmProvider;
  /** The model id (else AGORA_MODEL, else the provider's default). */
  model?: string;
  /** The API's base URL (else ANTHROPIC_BASE_URL or OPENAI_BASE_URL); OpenAI-compatible URLs end in `/v1`. */
  baseUrl?: string;
  /** The API key (else ANTHROPIC_API_KEY or OPENAI_API_KEY). */
  apiKey?: string;
};

/** The environment variables {@link chooseModel} reads. */
export type LlmEnvironment = Partial<
  Record<
    | 'AGORA_LLM'
    | 'AGORA_MODEL'
    | 'ANTHROPIC_API_KEY'
    | 'ANTHROPIC_AUTH_TOKEN'
    | 'ANTHROPIC_BASE_URL'
    | 'OPENAI_API_KEY'
    | 'OPENAI_BASE_URL',
    string | undefined
  >
>;

/** The provider and model a call of {@link chooseModel} settles on, for banners and metrics. */
export type ModelChoice = { provider: string; model: string };

// An empty or blank variable is unset: `ANTHROPIC_API_KEY= agora serve` turns the LLM off.
function set(value: string | undefined): string | undefined {
  return value?.trim() ? value.trim() : undefined;
}

/** Whether `name` is one of {@link LLM_PROVIDERS}. */
export function isLlmProvider(name: string): name is LlmProvider {
  return (LLM_PROVIDERS as readonly string[]).includes(name);
}

/** True when an Anthropic credential is configured in the environment (ANTHROPIC_API_KEY, or ANTHROPIC_AUTH_TOKEN). */
export function hasAnthropicKey(env: LlmEnvironment = process.env): boolean {
  // ANTHROPIC_AUTH_TOKEN counts too: the SDK authenticates with it when no key is set.
  return Boolean(set(env.ANTHROPIC_API_KEY) || set(env.ANTHROPIC_AUTH_TOKEN));
}

// The provider: as given, else AGORA_LLM, else the one the environment holds a key (or a server) for.
function providerOf(options: ChooseModelOptions, env: LlmEnvironment): LlmProvider | undefined {
  if (options.provider) return options.provider;
  const named = set(env.AGORA_LLM)?.toLowerCase();
  if (named !== undefined) {
    if (!isLlmProvider(named))
      throw new AgoraError(
        'INVALID_ARGUMENT',
        `AGORA_LLM must be one of ${LLM_PROVIDERS.join(', ')}, got ${JSON.stringify(named)}`,
      );
    return named;
  }
  if (hasAnthropicKey(env)) return 'anthropic';
  if (set(env.OPENAI_API_KEY) || set(env.OPENAI_BASE_URL)) return 'openai';
  return undefined;
}

/**
 * The LLM the options and the environment configure, or `undefined` when none is: no provider named and no key set.
 * A provider named without a key or a base URL is an error naming what is missing. No SDK is loaded here.
 * @example const llm = chooseModel({ provider: 'openai', baseUrl: 'http://localhost:11434/v1', model: 'llama3.2' });
 */
export function chooseModel(
  options: ChooseModelOptions = {},
  env: LlmEnvironment = process.env,
): LanguageModel | undefined {
  const provider = providerOf(options, env);
  if (provider === undefined) return undefined;
  if (provider === 'offline') return new OfflineModel();
  const model = set(options.model) ?? set(env.AGORA_MODEL);
  const retry: RetryOptions = {
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    ...(options.maxRetries !== undefined ? { maxRetries: options.maxRetries } : {}),
    ...(options.retryBaseMs !== undefined ? { retryBaseMs: options.retryBaseMs } : {}),
  };
  if (provider === 'anthropic') {
    const apiKey = set(options.apiKey) ?? set(env.ANTHROPIC_API_KEY);
    const baseURL = set(options.baseUrl) ?? set(env.ANTHROPIC_BASE_URL);
    const authToken = set(env.ANTHROPIC_AUTH_TOKEN);
    if (!apiKey && !authToken)
      throw new AgoraError(
        'INVALID_ARGUMENT',
        'The anthropic provider needs ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)',
      );
    return new AnthropicModel({
      ...retry,
      ...(model ? { model } : {}),
      ...(apiKey ? { apiKey } : { authToken }),
      ...(baseURL ? { baseURL } : {}),
    });
  }
  const apiKey = set(options.apiKey) ?? set(env.OPENAI_API_KEY);
  const baseURL = set(options.baseUrl) ?? set(env.OPENAI_BASE_URL);
  // A local server (Ollama, vLLM, LM Studio) needs no key, only its address.
  if (!apiKey && !baseURL)
    throw new AgoraError(
      'INVALID_ARGUMENT',
      'The openai provider needs OPENAI_API_KEY, or a base URL (--llm-base-url, OPENAI_BASE_URL) for a local server',
    );
  return new OpenAIModel({
    ...retry,
    ...(model ? { model } : {}),
    ...(apiKey ? { apiKey } : {}),
    ...(baseURL ? { baseURL } : {}),
  });
}

/** The provider and model an LLM answers with (`custom` for a model of the user's own), or undefined without one. */
export function describeModel(llm: LanguageModel | undefined): ModelChoice | undefined {
  return llm ? { provider: llm.provider ?? 'custom', model: llm.model } : undefined;
}

/**
 * The LLM `agora serve` configured before providers could be chosen: kept for callers of the earlier API; it is
 * {@link chooseModel} with the environment given.
 * @example const llm = modelFromEnvironment(); // undefined without a key
 */
export function modelFromEnvironment(env: LlmEnvironment = process.env, model?: string): LanguageModel | undefined {
  return chooseModel(model ? { model } : {}, env);
}

/** The default model of each provider. */
export const DEFAULT_MODELS: Record<LlmProvider, string> = {
  anthropic: DEFAULT_MODEL,
  openai: DEFAULT_OPENAI_MODEL,
  offline: OFFLINE_MODEL_ID,
};
