import { requireFolder } from './_files.js';
import type { ConversationStore } from './conversation/store.js';
import type { Logger } from './log.js';
import type { AgentMemory } from './memory/file.js';
import type { Metrics } from './metrics.js';
import type { KnownDocument, ProtocolRegistry } from './protocol/registry.js';
import { agentProfile, type AgentLlm } from './receiver/agent-llm.js';
import { assembleReceiver } from './receiver/assemble.js';
import { FolderReport } from './receiver/folder-report.js';
import type { AgentFolder } from './receiver/folder.js';
import type { Suitability } from './receiver/suitability.js';
import { AgoraError } from './errors.js';
import type { ZodType } from 'zod';
import type { McpServerStatus } from './tool/mcp/index.js';
import type { AgentProfile, ResponderCall } from './llm/peer-answers.js';
import { llmInfoMetric } from './receiver/llm-info.js';
import type { LanguageModel } from './llm/model.js';
import { normalizeHash } from './protocol/document.js';
import type { LoadedRoutine } from './routine/load.js';
import type { FollowUpRequest, QueryRequest, SuccessResponse, Wellknown } from './schemas.js';
import type { Tool } from './tool/define.js';
import { receiverSettings, type ReceiverSettings } from './receiver/defaults.js';
import type { EventChannel } from './receiver/event-channel.js';
import { TurnPipeline } from './receiver/pipeline.js';
import { ReplyStreams } from './receiver/reply-streams.js';
import type { ReplyEvent } from './receiver/event-channel.js';
import type {
  ListingBody,
  PreparedListing,
  ReceiverApi,
  ReceiverCapabilities,
  ReceiverExtensions,
  ReceiverHealth,
  ReceiverOptions,
  RequestContext,
  ServedDescription,
} from './receiver/types.js';
import { WellknownListing } from './receiver/wellknown.js';

export type {
  ListingBody,
  PreparedListing,
  ReceiverApi,
  ReceiverCapabilities,
  ReceiverExtensions,
  ReceiverHealth,
  ReceiverOptions,
  ReplyStreaming,
  RequestContext,
  RoutineRunner,
  ServedDescription,
  ServedEvent,
} from './receiver/types.js';
export type { QueryTarget } from './receiver/target.js';
export { EventChannel } from './receiver/event-channel.js';
export type { ReplyEvent } from './receiver/event-channel.js';
export { DEFAULT_CONVERSATION_TTL_MS, RECEIVER_DEFAULTS, tombstoneMsOf } from './receiver/defaults.js';

/**
 * An Agora receiver: answers queries with routines first, else the LLM, else the fixed failures of spec §2.
 * Knows nothing of HTTP: wrap it with `startServer` (node:http) or `agoraRouter` (Express).
 * @example
 * const receiver = await Receiver.start({ dir: './my-agent' });
 * const reply = await receiver.query({ protocolHash: hash, body: { city: 'Paris' } });
 */
export class Receiver implements ReceiverApi, PreparedListing, ReceiverHealth, ServedDescription {
  readonly dir: string;
  readonly store: ConversationStore;
  readonly memory: AgentMemory;
  /** Counters of queries, LLM calls and tokens. */
  readonly counters: Metrics;
  readonly logger: Logger;
  readonly registry: ProtocolRegistry;
  readonly llm: LanguageModel | undefined;
  readonly extensions: ReceiverExtensions;
  /** Streaming, the prepared listing, health and what faces describe: a `Receiver` has them all. */
  readonly capabilities: ReceiverCapabilities;
  readonly #settings: ReceiverSettings;
  readonly #folder: AgentFolder;
  readonly #suitability: Suitability;
  readonly #agentLlm: AgentLlm | undefined;
  readonly #pipeline: TurnPipeline;
  readonly #wellknown: WellknownListing;
  readonly #streams: ReplyStreams;
  readonly #report: FolderReport;
  #reportStarted: Promise<void> = Promise.resolve();

  constructor(options: ReceiverOptions = {}) {
    this.#settings = receiverSettings(options);
    const parts = assembleReceiver(this.#settings);
    ({ dir: this.dir, store: this.store, memory: this.memory, counters: this.counters, logger: this.logger } = parts);
    ({ registry: this.registry, model: this.llm, extensions: this.extensions } = parts);
    ({ folder: this.#folder, suitability: this.#suitability, llm: this.#agentLlm } = parts);
    this.#pipeline = new TurnPipeline(parts);
    this.#wellknown = new WellknownListing({ ...parts, publicUrl: this.#settings.publicUrl });
    this.#streams = new ReplyStreams({ ...parts, turns: this.#pipeline });
    this.#report = new FolderReport({
      registry: this.registry,
      folder: this.#folder,
      logger: this.logger,
      hasLlm: this.llm !== undefined,
      listed: async () => new Set(Object.keys(await this.wellknown())),
    });
    this.capabilities = { streaming: this.#streams, listing: this, health: this, description: this };
  }

  /** Creates a receiver and loads its folder (`protocols/` too, unless `waitForProtocols` is false). */
  static async start(options: ReceiverOptions = {}): Promise<Receiver> {
    const receiver = new Receiver(options);
    await receiver.load();
    return receiver;
  }

  /**
   * Loads protocols (unless `waitForProtocols` is false: then they go on loading), routines, tools and what was
   * learned before; starts watching. A missing folder is an AgoraError.
   */
  async load(): Promise<void> {
    await requireFolder(this.dir, 'agent folder');
    await Promise.all([
      this.registry.start({ wait: this.#settings.waitForProtocols }),
      this.#folder.load(this.#settings.watch),
      this.#suitability.load(),
    ]);
    // Once protocols/ is read, what it serves and not is said at each change (the report's own errors are logged).
    this.#reportStarted = this.registry.loaded().then(() => this.#report.start());
  }

  /** Resolves once the type-checks of the hand-written files and the reports of folder changes so far are logged. */
  async settled(): Promise<void> {
    await this.#folder.typeChecked();
    await this.#reportStarted;
    await this.#report.settled();
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

  /** Calls `listener` when the documents in `protocols/` change; returns how to stop. */
  onProtocolsChanged(listener: () => void): () => void {
    return this.registry.onLocalChange(listener);
  }

  /** The zod schemas of the routine file that answers a document (hex hash), when it has one. */
  routineSchemas(hash: string): { input?: ZodType; output?: ZodType } | undefined {
    const known = this.registry.get(hash);
    const routine = known ? this.routineFor(known)?.routine : undefined;
    if (routine === undefined) return undefined;
    const schemas: { input?: ZodType; output?: ZodType } = {};
    if (routine.input) schemas.input = routine.input;
    if (routine.output) schemas.output = routine.output;
    return schemas;
  }

  /** Whether a query in natural language can be answered (an LLM was given). */
  answersNaturalLanguage(): boolean {
    return this.llm !== undefined;
  }

  /** How the agent presents itself to its LLM. */
  profile(): AgentProfile {
    return agentProfile(this.#folder, this.registry);
  }

  /** An LLM call setup, counting tokens under a protocol label and purpose (LLM_UNAVAILABLE without an LLM). */
  responderCall(protocol: string, purpose: string, signal?: AbortSignal): ResponderCall {
    if (!this.#agentLlm) throw new AgoraError('LLM_UNAVAILABLE');
    return this.#agentLlm.call(protocol, purpose, signal);
  }

  /** The listing is shared between calls (built once per change): do not modify it. */
  async wellknown(context?: RequestContext): Promise<Wellknown> {
    return this.#wellknown.list(context);
  }

  /** The listing and its JSON body, built once per change (the wire adds its ETag and encodings). */
  wellknownBody(context?: RequestContext): Promise<ListingBody> {
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
    return this.#pipeline.query(request, context);
  }

  followUp(id: string, request: FollowUpRequest, context?: RequestContext): Promise<SuccessResponse> {
    return this.#pipeline.followUp(id, request, context);
  }

  queryStream(request: QueryRequest, context?: RequestContext): EventChannel {
    return this.#streams.queryStream(request, context);
  }

  followUpStream(id: string, request: FollowUpRequest, context?: RequestContext): EventChannel {
    return this.#streams.followUpStream(id, request, context);
  }

  events(id: string, lastEventId: number | undefined, context?: RequestContext): Promise<AsyncIterable<ReplyEvent>> {
    return this.#streams.events(id, lastEventId, context);
  }

  async end(id: string): Promise<void> {
    if (!(await this.store.delete(id))) {
      await this.store.get(id); // throws EXPIRED or NOT_FOUND
    }
  }

  /** Stops watching and closes the store and memory. */
  async close(): Promise<void> {
    this.#report.close();
    this.registry.close();
    await this.#folder.close();
    await this.store.close();
    await this.memory.close();
  }
}
