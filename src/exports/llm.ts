// `agora-agents/llm`: the LLM seam. Any model behind `LanguageModel`, the providers as one list (a new provider is
// its folder under src/llm/ and one line), the tool loop the receiver and the sender share, and retries.
export type {
  LanguageModel,
  LlmContentBlock,
  LlmIntent,
  LlmMessage,
  LlmPurpose,
  LlmRequest,
  LlmResponse,
  LlmStopReason,
  LlmToolCall,
  LlmToolSpec,
  LlmUsage,
  UsageSink,
} from '../llm/model.js';
export { AnthropicModel, DEFAULT_MODEL, type AnthropicModelOptions } from '../llm/anthropic/model.js';
export { OpenAIModel, DEFAULT_OPENAI_MODEL, type OpenAIModelOptions } from '../llm/openai/model.js';
export { OfflineModel } from '../llm/offline.js';
export {
  chooseModel,
  DEFAULT_MODELS,
  describeModel,
  hasAnthropicKey,
  LLM_PROVIDERS,
  modelFromEnvironment,
  type ChooseModelOptions,
  type LlmEnvironment,
  type LlmProvider,
  type ModelChoice,
} from '../llm/choose.js';
export { defineProvider, type LlmProviderSpec, type ProviderSettings } from '../llm/provider.js';
export { converse, type ConverseOptions, type ConverseResult } from '../llm/tool-loop.js';
export type { RetryOptions } from '../llm/retry.js';
export type { AgentProfile, HistoryMessage, ResponderCall } from '../llm/peer-answers.js';
