// The collaborators of a receiver's turns, in one object: built once by the receiver, read by the pipeline's steps.
import type { ConversationStore } from '../conversation/store.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { ProtocolRegistry } from '../protocol/registry.js';
import type { RoutineLimits } from '../routine/run.js';
import type { AgentLlm } from './agent-llm.js';
import type { ConversationCapacity } from './capacity.js';
import type { AgentFolder } from './folder.js';
import type { Suitability } from './suitability.js';
import type { QueryTargets } from './target.js';
import type { ReceiverExtensions } from './types.js';

/** What the turn pipeline works with: every collaborator and bound, passed as one object (tests build their own). */
export type TurnParts = {
  registry: ProtocolRegistry;
  folder: AgentFolder;
  suitability: Suitability;
  extensions: ReceiverExtensions;
  counters: Metrics;
  logger: Logger;
  store: ConversationStore;
  /** The agent's LLM; undefined for an agent of routines only. */
  llm: AgentLlm | undefined;
  /** The cap on live conversations; undefined without one. */
  capacity: ConversationCapacity | undefined;
  /** The targets of queries, the last one kept. */
  targets: QueryTargets;
  /** Each routine run's time limit, the deadlines it is timed on, and the opt-in isolation. */
  routineLimits: RoutineLimits;
  /** Clock in Unix milliseconds. */
  now: () => number;
  /** Inactivity before a conversation expires, ms. */
  ttlMs: number;
  /** Messages of history kept per conversation for the LLM. */
  maxHistory: number;
  /** Characters of history kept (the LLM's budget: more could never be sent). */
  maxHistoryChars: number;
};
