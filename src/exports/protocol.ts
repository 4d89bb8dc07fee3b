// `agora-agents/protocol`: protocol documents and where they come from, negotiation (spec §5), and the wire
// profile's conformance cases (`agora check`).
export {
  parseDocument,
  hashText,
  normalizeHash,
  encodeHash,
  formatDocument,
  documentFileName,
  type ProtocolDocument,
  type ProtocolMetadata,
  type HashEncoding,
} from '../protocol/document.js';
export { ProtocolRegistry, type KnownDocument, type RegistryOptions } from '../protocol/registry.js';
export { resolveSources, decodeDataUri, encodeDataUri, type SourceOptions } from '../protocol/sources.js';
export {
  negotiateProtocol,
  respondToNegotiation,
  writeProtocolFile,
  type NegotiateOptions,
  type NegotiationResult,
  type NegotiationTask,
  type NegotiationMessage,
} from '../negotiation.js';
export { checkAgent, type CaseResult, type CheckOptions } from '../conformance.js';
export { initAgent, type InitOptions, type FrameworkDependency, type DependencyOrigin } from '../init.js';
export { converse, type ConverseOptions, type ConverseResult, type UsageSink } from '../llm/tool-loop.js';
export { describeModel, modelFromEnvironment, LLM_PROVIDERS } from '../llm/choose.js';
export { DEFAULT_MODEL } from '../llm/anthropic/model.js';
export { DEFAULT_OPENAI_MODEL } from '../llm/openai/model.js';
export type { RetryOptions } from '../llm/retry.js';
export type { AgentProfile, ResponderCall, HistoryMessage } from '../llm/peer-answers.js';
export { Metrics, type MetricsObserver, type MetricsSnapshot, type QueryPath } from '../metrics.js';
export type { ReceiverExtensions, RoutineRunner, ServedEvent, QueryTarget } from '../receiver.js';
export {
  agentBaseUrl,
  HubProtocols,
  type SenderNegotiation,
  type SenderUsage,
  type PeerProtocol,
  type HubListing,
  type ProtocolHub,
} from '../sender/sender.js';
export type {
  SenderExtensions,
  SenderThresholds,
  TaskSpec,
  TaskFunction,
  TaskRoutine,
  TaskServedEvent,
  TaskState,
} from '../sender/tasks.js';
export type { ConversationMessage } from '../conversation/store.js';
