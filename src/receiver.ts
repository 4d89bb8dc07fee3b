import { join, resolve } from 'node:path';
import { nanoid } from 'nanoid';
import { requireFolder } from './_files.js';
import { MemoryConversationStore, type ConversationStore } from './conversation/store.js';
import { AgoraError } from './errors.js';
import type { ZodType } from 'zod';
import type { McpServerStatus } from './tool/mcp/index.js';
import { DEFAULT_MAX_LLM_CHARS } from './llm/budget.js';
import type { AgentProfile, ResponderCall } from './llm/peer-answers.js';
import { llmInfoMetric } from './receiver/llm-info.js';
import type { LanguageModel } from './llm/tool-loop.js';
import { consoleLogger, type Logger } from './log.js';
import { FileMemory, type AgentMemory } from './memory/file.js';
import { Metrics } from './metrics.js';
import { normalizeHash } from './protocol/document.js';
import { ProtocolRegistry, type KnownDocument } from './protocol/registry.js';
import type { LoadedRoutine } from './routine/load.js';
import { ISOLATED_SYNC_LIMIT_MS, SyncTimeLimit } from './routine/isolate.js';
import type { FollowUpRequest, JsonValue, QueryRequest, SuccessResponse, Wellknown } from './schemas.js';
import type { Tool } from './tool/define.js';
import { labelOf, signalOf, TurnAnswerer, type Route, type Turn } from './receiver/answer.js';
import { ConversationCapacity } from './receiver/capacity.js';
import { AgentFolder } from './receiver/folder.js';
import { Suitability } from './receiver/suitability.js';
import { QueryRouter } from './receiver/route.js';
import { recordHashOf, targetOf, targetOfRecord, type QueryTarget } from './receiver/target.js';
import type {
  PreparedListing,
  ReceiverApi,
  ReceiverExtensions,
  ReceiverOptions,
  RequestContext,
} from './receiver/types.js';
import type { EventChannel, ReplyEvent } from './receiver/stream.js';
import { ReceiverStreams } from './receiver/streaming.js';
import { WellknownListing } from './receiver/wellknown.js';

export type {
  PreparedListing,
  ReceiverApi,
  ReceiverExtensions,
  ReceiverOptions,
  RequestContext,
  RoutineRunner,
  ServedEvent,
} from './receiver/types.js';
export type { QueryTarget } from './receiver/target.js';
export { EventChannel, type ReplyEvent } from './receiver/stream.js';

/** How long a tombstone is kept, ms: `tombstoneTtl` seconds, by default (and at least) one conversation TTL (spec §2). */
export function tombstoneMsOf(options: Pick<ReceiverOptions, 'conversationTtl' | 'tombstoneTtl'>): number {
  const ttl = options.conversationTtl ?? 300;
  return Math.max(ttl, options.tombstoneTtl ?? ttl) * 1000;
}

/** Whether a query opens a conversation: Python senders send `multiround: true` on natural language too; a negotiation always does. */
function opensConversation(request: QueryRequest, target: QueryTarget): boolean {
  return request.multiround === true || target.kind === 'negotiation';
}

/** A single-round reply. */
function success(body: JsonValue): SuccessResponse {
  return { status: 'success', body };
}

/**
 * An Agora receiver: answers queries with routines first, else the LLM, else the fixed failures of spec §2.
 * Knows nothing of HTTP: wrap it with `startServer` (node:http) or `agoraRouter` (Express).
 * @example
 * const receiver = await Receiver.start({ dir: './my-agent' });
 * const reply = await receiver.query({ protocolHash: hash, body: { city: 'Paris' } });
 */
export class Receiver implements ReceiverApi {
  readonly dir: string;
  readonly store: ConversationStore;
  readonly memory: AgentMemory;
  /** Counters of queries, LLM calls and tokens. */
  readonly counters: Metrics;
  readonly logger: Logger;
  readonly registry: ProtocolRegistry;
  readonly llm: LanguageModel | undefined;
  readonly extensions: ReceiverExtensions;
  readonly #options: ReceiverOptions;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #folder: AgentFolder;
  readonly #suitability: Suitability;
  readonly #answerer: TurnAnswerer;
  readonly #capacity: ConversationCapacity | undefined;
  readonly #router: QueryRouter;
  readonly #wellknown: WellknownListing;
  readonly #streams: ReceiverStreams;

  constructor(options: ReceiverOptions = {}) {
    this.#options = options;
    this.dir = resolve(options.dir ?? '.');
    this.logger = options.logger ?? consoleLogger();
    this.#now = options.now ?? Date.now;
    this.#ttlMs = (options.conversationTtl ?? 300) * 1000;
    // Spec §2: an expired id answers "Conversation expired" for at least one TTL.
    this.store = options.store ?? new MemoryConversationStore({ now: this.#now, tombstoneMs: tombstoneMsOf(options) });
    this.memory = options.memory ?? new FileMemory(join(this.dir, '.agora'));
    this.counters = options.metrics ?? new Metrics();
    // The model given, if any: the environment is read by the CLI and `startAgent({ llm: 'auto' })`, not here.
    this.llm = options.llm ?? undefined;
    this.extensions = options.extensions ?? {};
    this.registry = new ProtocolRegistry({
      directory: join(this.dir, 'protocols'),
      memory: this.memory,
      logger: this.logger,
      sources: {
        allowPrivateSources: options.allowPrivateSources ?? false,
        ...(options.maxDocumentBytes ? { maxBytes: options.maxDocumentBytes } : {}),
      },
      // A learned document used within one conversation TTL may carry a conversation under way: never evicted.
      learned: {
        liveMs: this.#ttlMs,
        ...(options.maxLearnedDocuments ? { maxCount: options.maxLearnedDocuments } : {}),
        ...(options.maxLearnedBytes ? { maxBytes: options.maxLearnedBytes } : {}),
      },
      watch: options.watch ?? true,
      rescanMs: this.#rescanMs,
      now: this.#now,
    });
    this.#folder = new AgentFolder({
      dir: this.dir,
      logger: this.logger,
      name: options.name,
      description: options.description,
      tools: options.tools,
      rescanMs: this.#rescanMs,
    });
    this.#suitability = new Suitability(this.memory, this.logger);
    this.#answerer = new TurnAnswerer({
      folder: this.#folder,
      counters: this.counters,
      logger: this.logger,
      extensions: this.extensions,
      hasLlm: this.llm !== undefined,
      responderCall: (protocol, purpose, signal) => this.responderCall(protocol, purpose, signal),
      routineTimeoutMs: (options.routineTimeout ?? 10) * 1000,
      ...(options.isolateRoutines
        ? {
            isolation: {
              limit: new SyncTimeLimit(),
              syncMs: Math.min(ISOLATED_SYNC_LIMIT_MS, (options.routineTimeout ?? 10) * 1000),
            },
          }
        : {}),
      maxHistory: Math.max(2, options.maxHistory ?? 40),
      maxHistoryChars: options.maxLlmChars ?? DEFAULT_MAX_LLM_CHARS,
    });
    this.#capacity =
      options.maxConversations === undefined
        ? undefined
        : new ConversationCapacity(options.maxConversations, this.store);
    this.#router = new QueryRouter({
      registry: this.registry,
      answerer: this.#answerer,
      suitability: this.#suitability,
      extensions: this.extensions,
      counters: this.counters,
      hasLlm: this.llm !== undefined,
      responderCall: (protocol, purpose) => this.responderCall(protocol, purpose),
    });
    this.#wellknown = new WellknownListing({
      registry: this.registry,
      folder: this.#folder,
      suitability: this.#suitability,
      extensions: this.extensions,
      hasLlm: this.llm !== undefined,
      logger: this.logger,
      now: this.#now,
      publicUrl: options.publicUrl,
    });
    this.#streams = new ReceiverStreams({
      store: this.store,
      ttlMs: this.#ttlMs,
      logger: this.logger,
      counters: this.counters,
    });
  }

  /** Creates a receiver and loads its folder (`protocols/` too, unless `waitForProtocols` is false). */
  static async start(options: ReceiverOptions = {}): Promise<Receiver> {
    const receiver = new Receiver(options);
    await receiver.load();
    return receiver;
  }

  /** Seconds between safety rescans, in ms: by default 300 s while watching, none without. */
  get #rescanMs(): number {
    return (this.#options.rescanInterval ?? (this.#options.watch === false ? 0 : 300)) * 1000;
  }

  /**
   * Loads protocols (unless `waitForProtocols` is false: then they go on loading), routines, tools and what was
   * learned before; starts watching. A missing folder is an AgoraError.
   */
  async load(): Promise<void> {
    await requireFolder(this.dir, 'agent folder');
    const wait = this.#options.waitForProtocols !== false;
    await Promise.all([
      this.registry.start({ wait }),
      this.#folder.load(this.#options.watch !== false),
      this.#suitability.load(),
    ]);
  }

  /** Whether `protocols/` is still being read at the start (a lookup that misses waits for it). */
  loading(): boolean {
    return this.registry.loading;
  }

  /** Resolves once `protocols/` has been read at the start (at once when it has). */
  loaded(): Promise<void> {
    return this.registry.loaded();
  }

  /** The `.agora/cache` folder where TypeScript modules are built for import. */
  get cacheDir(): string {
    return this.#folder.cacheDir;
  }

  /** The agent's name. */
  get name(): string {
    return this.#folder.name;
  }

  /** Re-reads `routines/` (the watcher calls it). */
  reloadRoutines(): Promise<void> {
    return this.#folder.reloadRoutines();
  }

  /** The agent's tools (from `tools/` and the options). */
  get tools(): readonly Tool[] {
    return this.#folder.tools;
  }

  /** The routines loaded from `routines/`, by name. */
  get routines(): ReadonlyMap<string, LoadedRoutine> {
    return this.#folder.routines;
  }

  /** The routine file for a document, when one is in `routines/`. */
  routineFor(known: KnownDocument): LoadedRoutine | undefined {
    return this.#folder.routineFor(known);
  }

  /** How the MCP servers of the agent's `mcp.json` are doing (for the banner and the dashboard). */
  mcpServers(): McpServerStatus[] {
    return this.#folder.mcpServers();
  }

  onProtocolsChanged(listener: () => void): () => void {
    return this.registry.onLocalChange(listener);
  }

  routineSchemas(hash: string): { input?: ZodType; output?: ZodType } | undefined {
    const known = this.registry.get(hash);
    const routine = known ? this.routineFor(known)?.routine : undefined;
    if (routine === undefined) return undefined;
    return {
      ...(routine.input ? { input: routine.input } : {}),
      ...(routine.output ? { output: routine.output } : {}),
    };
  }

  answersNaturalLanguage(): boolean {
    return this.llm !== undefined;
  }

  /** How the agent presents itself to its LLM. */
  profile(): AgentProfile {
    return {
      name: this.#folder.name,
      description: this.#folder.description,
      protocols: this.registry
        .local()
        .map(({ document }) => ({ name: document.metadata.name, description: document.metadata.description })),
      tools: this.#folder.tools,
    };
  }

  /** An LLM call setup, counting tokens under a protocol label and purpose. */
  responderCall(protocol: string, purpose: string, signal?: AbortSignal): ResponderCall {
    if (!this.llm) throw new AgoraError('LLM_UNAVAILABLE');
    return {
      model: this.llm,
      profile: this.profile(),
      onUsage: (usage) => this.counters.llmCall(protocol, purpose, usage.inputTokens, usage.outputTokens),
      ...(this.#options.maxToolSteps ? { maxSteps: this.#options.maxToolSteps } : {}),
      ...(this.#options.maxLlmChars ? { maxChars: this.#options.maxLlmChars } : {}),
      ...(signal ? { signal } : {}),
    };
  }

  /** The listing is shared between calls (built once per change): do not modify it. */
  async wellknown(context?: RequestContext): Promise<Wellknown> {
    return this.#wellknown.list(context);
  }

  wellknownPrepared(context?: RequestContext): Promise<PreparedListing> {
    return this.#wellknown.prepared(context);
  }

  async document(hash: string): Promise<string | undefined> {
    const normalized = normalizeHash(hash);
    if (!normalized) return undefined;
    const text = this.registry.text(normalized);
    if (text !== undefined) return text;
    // Learned by another process sharing the memory; a candidate (not chosen) is never served.
    const known = await this.registry.resolve(normalized, []);
    return known && known.origin !== 'candidate' ? known.document.text : undefined;
  }

  async metrics(): Promise<string> {
    return this.counters.render() + llmInfoMetric(this.llm);
  }

  async ready(): Promise<boolean> {
    return (await this.store.ready?.()) ?? true;
  }

  query(request: QueryRequest, context?: RequestContext): Promise<SuccessResponse> {
    // Not an async function: a single-round query under a held routine (the hot path) waits on its answer alone, with
    // no async frame of its own (V8 allocates an async function's register file each time it awaits).
    try {
      const target = targetOf(request.protocolHash);
      const route = this.#router.routeNow(target);
      if (route === undefined || opensConversation(request, target))
        return this.#routedQuery(route, target, request, context);
      return this.#singleRound(route, request, context).then(success);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async #routedQuery(
    known: Route | undefined,
    target: QueryTarget,
    request: QueryRequest,
    context: RequestContext | undefined,
  ): Promise<SuccessResponse> {
    const route = known ?? (await this.#router.ofQuery(target, request.protocolSources));
    if (opensConversation(request, target)) return this.#firstTurn(route, target, request, context);
    return success(await this.#singleRound(route, request, context));
  }

  /** A query's one turn, with no conversation kept. */
  #singleRound(route: Route, request: QueryRequest, context: RequestContext | undefined): Promise<JsonValue> {
    context?.onTurn?.(null, true);
    return this.#answerer.answer(
      route,
      { id: null, turn: 1, state: {}, history: [] },
      request.body,
      signalOf(context),
      context?.onDelta,
      context?.outcome,
    );
  }

  async #firstTurn(
    route: Route,
    target: QueryTarget,
    request: QueryRequest,
    context: RequestContext | undefined,
  ): Promise<SuccessResponse> {
    // The place is taken before the first turn runs, so concurrent first turns cannot together pass the cap.
    const release = this.#capacity ? await this.#capacity.reserve() : undefined;
    if (release === false) this.#router.refuse('TOO_MANY_CONVERSATIONS', labelOf(route));
    try {
      const id = nanoid(24);
      const turn: Turn = { id, turn: 1, state: {}, history: [] };
      context?.onTurn?.(id, true);
      const reply = await this.#answerer.answer(
        route,
        turn,
        request.body,
        signalOf(context),
        context?.onDelta,
        context?.outcome,
      );
      const now = this.#now();
      const expiresAt = now + this.#ttlMs;
      await this.store.create({
        id,
        protocolHash: recordHashOf(target),
        createdAt: now,
        expiresAt,
        turn: 1,
        state: turn.state,
        history: turn.history,
      });
      return { status: 'success', body: reply, conversationId: id, conversationExpires: Math.floor(expiresAt / 1000) };
    } finally {
      release?.();
    }
  }

  async followUp(id: string, request: FollowUpRequest, context?: RequestContext): Promise<SuccessResponse> {
    const named =
      request.protocolHash === undefined || request.protocolHash === null
        ? undefined
        : recordHashOf(targetOf(request.protocolHash));
    // Everything happens inside the turn: one read of the record, under the conversation's lock.
    const reply = await this.store.runTurn(id, this.#ttlMs, async (current) => {
      if (named !== undefined && named !== current.protocolHash) throw new AgoraError('PROTOCOL_CHANGED');
      const route = await this.#router.ofRecord(targetOfRecord(current.protocolHash), request.protocolSources);
      const turn: Turn = { id, turn: current.turn + 1, state: current.state, history: current.history };
      context?.onTurn?.(id, false);
      const body = await this.#answerer.answer(
        route,
        turn,
        request.body,
        signalOf(context),
        context?.onDelta,
        context?.outcome,
      );
      return { result: body, state: turn.state, history: turn.history };
    });
    const expires = Math.floor((this.#now() + this.#ttlMs) / 1000);
    return { status: 'success', body: reply, conversationId: id, conversationExpires: expires };
  }

  queryStream(request: QueryRequest, context?: RequestContext): EventChannel {
    return this.#streams.turn('query', context, (inner) => this.query(request, inner));
  }

  followUpStream(id: string, request: FollowUpRequest, context?: RequestContext): EventChannel {
    return this.#streams.turn('follow_up', context, (inner) => this.followUp(id, request, inner));
  }

  events(id: string, lastEventId: number | undefined, context?: RequestContext): Promise<AsyncIterable<ReplyEvent>> {
    return this.#streams.resume(id, lastEventId, context);
  }

  async end(id: string): Promise<void> {
    if (!(await this.store.delete(id))) {
      await this.store.get(id); // throws EXPIRED or NOT_FOUND
    }
  }

  /** Stops watching and closes the store and memory. */
  async close(): Promise<void> {
    this.registry.close();
    await this.#folder.close();
    await this.store.close();
    await this.memory.close();
  }
}
