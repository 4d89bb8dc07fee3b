// The public API of agora-agents: every name here is a promise. Optional parts live at subpaths:
// `agora-agents/express`, `agora-agents/redis`, `agora-agents/testing`.
/** zod, re-exported so routines and tools need no dependency of their own. */
export { z } from 'zod';
export { AgoraError, isAgoraError, FIXED_MESSAGES, type AgoraErrorCode } from './errors.js';
export type { JsonValue, JsonObject, QueryRequest, FollowUpRequest, QueryResponse, SuccessResponse, FailureResponse, Wellknown } from './schemas.js';
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
} from './protocol/document.js';
export { ProtocolRegistry, type KnownDocument, type RegistryOptions } from './protocol/registry.js';
export { resolveSources, decodeDataUri, encodeDataUri, type SourceOptions } from './protocol/sources.js';
export { MemoryConversationStore, type ConversationStore, type ConversationRecord, type ConversationMessage } from './conversation/store.js';
export { FileMemory, InMemoryMemory, type AgentMemory } from './memory/file.js';
export { defineRoutine, type Routine, type RoutineContext, type RoutineDefinition, type RoutineFunction } from './routine/define.js';
export { defineTool, type Tool, type ToolContext } from './tool/define.js';
export {
  converse,
  type LanguageModel,
  type LlmRequest,
  type LlmResponse,
  type LlmMessage,
  type LlmUsage,
  type LlmContentBlock,
  type LlmToolSpec,
  type ConverseOptions,
  type ConverseResult,
  type UsageSink,
} from './llm/toolformer.js';
export type { AgentProfile, ResponderCall, HistoryMessage } from './llm/responders.js';
export { AnthropicModel, DEFAULT_MODEL, type AnthropicModelOptions } from './llm/anthropic/model.js';
export { OpenAIModel, DEFAULT_OPENAI_MODEL, type OpenAIModelOptions } from './llm/openai/model.js';
export { chooseModel, describeModel, hasAnthropicKey, modelFromEnvironment, LLM_PROVIDERS, type ChooseModelOptions, type LlmProvider } from './llm/choose.js';
export type { LlmStopReason, LlmToolCall } from './llm/model.js';
export type { RetryOptions } from './llm/retry.js';
export { Metrics, type MetricsObserver, type MetricsSnapshot, type QueryPath } from './metrics.js';
export { consoleLogger, silentLogger, type Logger } from './log.js';
export {
  Receiver,
  type ReceiverOptions,
  type ReceiverApi,
  type ReceiverExtensions,
  type RequestContext,
  type RoutineRunner,
  type ServedEvent,
  type QueryTarget,
} from './receiver.js';
export { createHandler, type HttpOptions, type CoreRequest, type CoreResponse } from './http/handler.js';
export { startServer, type ServerOptions, type RunningServer } from './http/server.js';
/** The client side: queries, conversations, discovery and negotiation. */
export {
  Sender,
  agentBaseUrl,
  type SenderOptions,
  type SenderConversation,
  type SenderNegotiation,
  type SenderUsage,
  type QueryOptions,
  type QueryResult,
  type PeerProtocol,
  HubProtocols,
  type HubListing,
  type ProtocolHub,
} from './sender/sender.js';
/** Typed tasks (`sender.task()`): natural language, then a fitting or negotiated protocol as they are used. */
export {
  type SenderExtensions,
  type SenderThresholds,
  type TaskSpec,
  type TaskFunction,
  type TaskRoutine,
  type TaskServedEvent,
  type TaskState,
} from './sender/tasks.js';
/** Both sides of a protocol negotiation (spec §5), and where a negotiated document is written. */
export { negotiateProtocol, respondToNegotiation, writeProtocolFile, type NegotiateOptions, type NegotiationResult, type NegotiationTask, type NegotiationMessage } from './negotiation.js';
/** Routines written by the LLM: generation, checks, approval and the worker that runs them. */
export { RoutineGenerator, type RoutineGeneratorOptions } from './generation/generate.js';
export { TaskRoutineStore, generateTaskRoutine, type TaskRoutineStoreOptions } from './generation/task-routines.js';
export { listGeneratedRoutines, reviewGeneratedRoutine, type GeneratedRoutineEntry } from './generation/review.js';
export type { RoutineStatus, RoutineStatusName, RoutineCounters } from './generation/status.js';
/** A whole agent from a folder, served over node:http; and a new agent folder. */
export { startAgent, type AgentOptions, type RunningAgent } from './agent.js';
/** `GET /dashboard`: mounted by `startAgent` and `agoraRouter`; made here to pass to `startServer({ routes })` or close yourself. */
export { createAgentDashboard, type AgentDashboard, type AgentDashboardOptions } from './dashboard/agent-dashboard.js';
export type { ExtraRoutes } from './http/server.js';
/** The wire profile's conformance cases, run over HTTP against any agent (`agora check`). */
export { checkAgent, type CaseResult, type CheckOptions } from './conformance.js';
export { initAgent, type InitOptions, type FrameworkDependency, type DependencyOrigin } from './init.js';
/** A network of agents: the hub (directory, protocol database, routing, chains) and its client. */
export { Hub, type HubOptions, type ProtocolListing } from './hub/hub.js';
export { startHub, createHubListener, type StartHubOptions, type RunningHub } from './hub/server.js';
export { HubClient, type HubClientOptions, type HubAgent, type HubProtocol } from './hub/client.js';
export { runChain, resumeChain, type ChainOptions } from './hub/chains.js';
export type { RouteDecision } from './hub/routing.js';
export type { AgentRecord, ChainRun, Hop } from './hub/records.js';
/** Rooms: several agents in one structured discussion on a hub. */
export { Rooms, type RoomsOptions, type RoomAction } from './hub/rooms/rooms.js';
export { ROOM_DOCUMENT, type TurnQuery, type TurnReply } from './hub/rooms/document.js';
export { MemoryRoomStore, type RoomStore } from './hub/rooms/store.js';
export { RedisRoomStore, type RedisRoomStoreOptions } from './hub/rooms/redis-store.js';
export type { RoomRecord, RoomEvent, RoomRequest, RoomState, TranscriptEntry } from './hub/rooms/records.js';
