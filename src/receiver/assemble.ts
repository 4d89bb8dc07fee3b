// How a receiver is put together from its settings: its store, memory, documents, folder, LLM and bounds, as the
// one object of parts its pipeline, listing and streams share.
import { join, resolve } from 'node:path';
import { MemoryConversationStore } from '../conversation/store.js';
import type { LanguageModel } from '../llm/model.js';
import { consoleLogger } from '../log.js';
import { FileMemory, type AgentMemory } from '../memory/file.js';
import { Metrics } from '../metrics.js';
import { ProtocolRegistry } from '../protocol/registry.js';
import { RoutineDeadlines } from '../routine/deadlines.js';
import { ISOLATED_SYNC_LIMIT_MS, SyncTimeLimit } from '../routine/isolate.js';
import { AgentLlm } from './agent-llm.js';
import { ConversationCapacity } from './capacity.js';
import type { ReceiverSettings } from './defaults.js';
import { AgentFolder } from './folder.js';
import type { TurnParts } from './parts.js';
import { Suitability } from './suitability.js';
import { QueryTargets } from './target.js';

/** A receiver's parts, with what the receiver itself keeps: its folder's path, memory and model. */
export type ReceiverAssembly = TurnParts & { dir: string; memory: AgentMemory; model: LanguageModel | undefined };

/** Builds the parts of a receiver from its settings (what the options give is used as it is). */
export function assembleReceiver(settings: ReceiverSettings): ReceiverAssembly {
  const dir = resolve(settings.dir);
  const logger = settings.logger ?? consoleLogger();
  const now = settings.now ?? Date.now;
  const ttlMs = settings.conversationTtlMs;
  // Spec §2: an expired id answers "Conversation expired" for at least one TTL.
  const store = settings.store ?? new MemoryConversationStore({ now, tombstoneMs: settings.tombstoneTtlMs });
  const memory = settings.memory ?? new FileMemory(join(dir, '.agora'));
  const counters = settings.metrics ?? new Metrics();
  const model = settings.llm ?? undefined;
  const registry = new ProtocolRegistry({
    directory: join(dir, 'protocols'),
    memory,
    logger,
    sources: { allowPrivateSources: settings.allowPrivateSources, maxBytes: settings.maxDocumentBytes },
    // A learned document used within one conversation TTL may carry a conversation under way: never evicted.
    learned: { liveMs: ttlMs, maxCount: settings.maxLearnedDocuments, maxBytes: settings.maxLearnedBytes },
    watch: settings.watch,
    rescanMs: settings.rescanIntervalMs,
    now,
  });
  const folder = new AgentFolder({
    dir,
    logger,
    name: settings.name,
    description: settings.description,
    tools: settings.tools,
    rescanMs: settings.rescanIntervalMs,
    typeCheck: settings.typeCheck,
  });
  const llm =
    model &&
    new AgentLlm({
      model,
      folder,
      registry,
      counters,
      maxToolSteps: settings.maxToolSteps,
      maxLlmChars: settings.maxLlmChars,
    });
  const timeoutMs = settings.routineTimeoutMs;
  return {
    dir,
    memory,
    model,
    registry,
    folder,
    suitability: new Suitability(memory, logger),
    extensions: settings.extensions ?? {},
    counters,
    logger,
    store,
    llm,
    capacity:
      settings.maxConversations === undefined ? undefined : new ConversationCapacity(settings.maxConversations, store),
    targets: new QueryTargets(),
    routineLimits: {
      timeoutMs,
      deadlines: new RoutineDeadlines(),
      isolation: settings.isolateRoutines
        ? { limit: new SyncTimeLimit(), syncMs: Math.min(ISOLATED_SYNC_LIMIT_MS, timeoutMs) }
        : undefined,
    },
    now,
    ttlMs,
    maxHistory: Math.max(2, settings.maxHistory),
    maxHistoryChars: settings.maxLlmChars,
  };
}
