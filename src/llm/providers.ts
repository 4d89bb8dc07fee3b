// The LLM providers the framework speaks to, in the order the environment is searched for one: adding a provider
// is its folder (its model and a `provider.ts` made with `defineProvider`) and one line here. `chooseModel`, the
// CLI's `--llm` and `--llm-base-url`, and the test configuration (which blanks every variable) read this list.
import { anthropicProvider } from './anthropic/provider.js';
import { offlineProvider } from './offline.js';
import { openaiProvider } from './openai/provider.js';

/** Every provider, Anthropic first: with several keys set, the first configured one answers. */
export const PROVIDERS = [anthropicProvider, openaiProvider, offlineProvider] as const;

/** The name of a provider of {@link PROVIDERS}. */
export type LlmProvider = (typeof PROVIDERS)[number]['name'];

/** The variables `chooseModel` reads besides the providers' own: which provider, and which model. */
export const CHOICE_ENV = ['AGORA_LLM', 'AGORA_MODEL'] as const;

/** Every environment variable the library or the CLI reads to choose and reach an LLM (tests blank them all). */
export const LLM_ENV: readonly string[] = [...CHOICE_ENV, ...PROVIDERS.flatMap((provider) => provider.env)];
