// The contract of an LLM provider: what a folder under `src/llm/` exports so that `providers.ts` can list it. The
// list is the one place `chooseModel`, the CLI's `--llm` and the test configuration learn which providers exist.
import type { LanguageModel } from './model.js';
import type { RetryOptions } from './retry.js';

/** The environment a provider reads its keys and endpoints from (the CLI passes `process.env`). */
export type LlmEnvironment = Readonly<Record<string, string | undefined>>;

/** What the caller settled for a provider: model, key and endpoint (else the provider's environment), retries. */
export type ProviderSettings = RetryOptions & {
  /** The model id (else the provider's default). */
  model?: string;
  /** The API key (else the provider's key variable). */
  apiKey?: string;
  /** The API's base URL (else the provider's base URL variable). */
  baseUrl?: string;
};

/** One LLM provider: its `--llm` name, the variables it reads, its default model, and how its model is made. */
export type LlmProviderSpec<Name extends string = string> = {
  /** The name `--llm` and `AGORA_LLM` take. */
  readonly name: Name;
  /** Every environment variable it reads (keys, tokens, base URLs): documented by the CLI, blanked in tests. */
  readonly env: readonly string[];
  /** The model used when neither `--model` nor AGORA_MODEL names one. */
  readonly defaultModel: string;
  /** The help text of `--llm-base-url` names it when set: the variable of the provider's endpoint. */
  readonly baseUrlEnv?: string;
  /** Whether the environment configures it (a key, a server): picked first in list order; absent: only when named. */
  configured?(env: LlmEnvironment): boolean;
  /** Its model, or an AgoraError('INVALID_ARGUMENT') naming what is missing. Loads no SDK (that waits for a call). */
  create(settings: ProviderSettings, env: LlmEnvironment): LanguageModel;
};

/** Declares a provider, keeping its name as a literal type (so `LlmProvider` lists the names). */
export function defineProvider<const Name extends string>(spec: LlmProviderSpec<Name>): LlmProviderSpec<Name> {
  return spec;
}

/** A variable's value, trimmed; an empty or blank one is unset (`ANTHROPIC_API_KEY= agora serve` turns the LLM off). */
export function setting(value: string | undefined): string | undefined {
  return value?.trim() ? value.trim() : undefined;
}
