// agora-agents: what an agent author needs. Every name here is a promise, and importing it loads no server
// machinery (no ioredis, ws, quickjs-emscripten or express: test/index.test.ts checks). The rest lives at subpaths:
// `agora-agents/llm` (the LLM seam and providers), `/protocol` (documents, registry, negotiation, conformance),
// `/edge` (serving: mounts, the Agora wire, dashboards, metrics), `/express`, `/faces` (the other protocols' faces),
// `/hub`, `/generation` (LLM-written routines), `/redis` (every Redis backend), `/testing`. Each lists its names.
/** zod, re-exported so routines and tools need no dependency of their own. */
export { z } from 'zod';
export { AgoraError, isAgoraError, FIXED_MESSAGES, type AgoraErrorCode } from './errors.js';
export type {
  JsonValue,
  JsonObject,
  QueryRequest,
  FollowUpRequest,
  QueryResponse,
  SuccessResponse,
  FailureResponse,
  Wellknown,
} from './schemas.js';
export { hashText, parseDocument, type ProtocolDocument, type ProtocolMetadata } from './protocol/document.js';
export {
  defineRoutine,
  type Routine,
  type RoutineContext,
  type RoutineDefinition,
  type RoutineFunction,
} from './routine/define.js';
export { defineTool, type Tool, type ToolContext } from './tool/define.js';
/** Where conversations and what an agent learns are kept: interfaces with their in-process defaults. */
export {
  MemoryConversationStore,
  type ConversationStore,
  type ConversationRecord,
  type ConversationMessage,
} from './conversation/store.js';
export { FileMemory, InMemoryMemory, type AgentMemory } from './memory/file.js';
/** The LLM seam: any model behind `LanguageModel`, chosen in one place (`chooseModel`); each SDK loads at its first call. */
export type {
  LanguageModel,
  LlmRequest,
  LlmResponse,
  LlmMessage,
  LlmUsage,
  LlmContentBlock,
  LlmToolSpec,
  LlmStopReason,
  LlmToolCall,
} from './llm/model.js';
export { AnthropicModel, type AnthropicModelOptions } from './llm/anthropic/model.js';
export { OpenAIModel, type OpenAIModelOptions } from './llm/openai/model.js';
export { chooseModel, hasAnthropicKey, type ChooseModelOptions, type LlmProvider } from './llm/choose.js';
export { OfflineModel } from './llm/offline.js';
export { consoleLogger, silentLogger, type Logger } from './log.js';
/** The receiving side: an agent's folder answered by routines, then the LLM. */
export {
  Receiver,
  RECEIVER_DEFAULTS,
  type ReceiverOptions,
  type ReceiverApi,
  type ReceiverCapabilities,
  type RequestContext,
  type ReceiverExtensions,
  type RoutineRunner,
  type ServedEvent,
  type QueryTarget,
} from './receiver.js';
/** The sending side: queries, conversations, discovery, negotiation and typed tasks. */
export {
  Sender,
  type SenderOptions,
  type SenderConversation,
  type QueryOptions,
  type QueryResult,
  agentBaseUrl,
  HubProtocols,
  type SenderNegotiation,
  type SenderUsage,
  type PeerProtocol,
  type HubListing,
  type ProtocolHub,
} from './sender/sender.js';
/** Access tokens by OAuth 2.1's client-credentials grant, renewed before they expire: a client's `tokenSource`. */
export {
  ClientCredentials,
  originResource,
  CLIENT_CREDENTIALS_DEFAULTS,
  type ClientCredentialsOptions,
  type TokenSource,
} from './net/token-source.js';
export type {
  SenderExtensions,
  SenderThresholds,
  TaskSpec,
  TaskFunction,
  TaskRoutine,
  TaskServedEvent,
  TaskState,
} from './sender/tasks.js';
export {
  A2aClient,
  askPeer,
  detectPeerKind,
  OapClient,
  oapEnvelope,
  RoarClient,
  type A2aClientOptions,
  type PeerKind,
  type RoarClientOptions,
} from './bindings/peers.js';
/** A new agent's folder, scaffolded as `agora init` does. */
export { initAgent, type InitOptions, type FrameworkDependency, type DependencyOrigin } from './init.js';
/** A whole agent from a folder, or a receiver, served over node:http (the server machinery loads on first use). */
export {
  startAgent,
  startServer,
  type AgentOptions,
  type RunningAgent,
  type ServerOptions,
  type RunningServer,
} from './agent.js';
