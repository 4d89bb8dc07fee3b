import { readFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { nanoid } from 'nanoid';
import { MemoryConversationStore, type ConversationMessage, type ConversationStore } from './conversation/store.js';
import { AgoraError, describeError, isAgoraError } from './errors.js';
import { answerNaturalLanguage, answerUnderProtocol, judgeSuitability, type AgentProfile, type ResponderCall } from './llm/responders.js';
import type { LanguageModel } from './llm/toolformer.js';
import { consoleLogger, type Logger } from './log.js';
import { FileMemory, type AgentMemory } from './memory/file.js';
import { Metrics, NATURAL_LANGUAGE, type QueryPath } from './metrics.js';
import { normalizeHash, type ProtocolDocument } from './protocol/document.js';
import { ProtocolRegistry, type KnownDocument } from './protocol/registry.js';
import type { RoutineContext } from './routine/define.js';
import { watchFolder } from './_files.js';
import { loadRoutineFolder, type LoadedRoutine } from './routine/load.js';
import { runRoutine } from './routine/run.js';
import type { FollowUpRequest, JsonObject, JsonValue, QueryRequest, SuccessResponse, Wellknown } from './schemas.js';
import { callTool, type Tool } from './tool/define.js';
import { loadToolFolder } from './tool/load.js';

/** How long the default stores keep a tombstone at least: one hour, or one TTL when that is longer. */
export const DEFAULT_TOMBSTONE_MS = 60 * 60 * 1000;

/** Who is asking, as the HTTP edge knows it (used for logs, rate limits and links). */
export type RequestContext = {
  /** The base URL the request reached, e.g. `http://127.0.0.1:3000/agora` (used when no public URL is set). */
  baseUrl?: string;
  /** The client's address. */
  remoteAddress?: string;
  signal?: AbortSignal;
};

/** What the HTTP edge needs from a receiver. Every method throws AgoraError on failure. */
export interface ReceiverApi {
  /** `POST /`: a new query. */
  query(request: QueryRequest, context?: RequestContext): Promise<SuccessResponse>;
  /** `POST /conversations/:id`: the next turn. */
  followUp(id: string, request: FollowUpRequest, context?: RequestContext): Promise<SuccessResponse>;
  /** `DELETE /conversations/:id`. */
  end(id: string): Promise<void>;
  /** `GET /wellknown`: hex hash → sources. */
  wellknown(context?: RequestContext): Promise<Wellknown>;
  /** `GET /protocols/:hash`: the exact text of a document this agent holds (hash already normalized to hex). */
  document(hash: string): Promise<string | undefined>;
  /** `GET /metrics`: Prometheus text. */
  metrics(): Promise<string>;
}

/** A routine supplied by an extension (e.g. LLM-written routines): throws to fall back to the LLM. */
export type RoutineRunner = (body: JsonValue, context: Omit<RoutineContext, 'signal'>) => Promise<JsonValue>;

/** What the receiver reports after each answered turn under a protocol or in natural language. */
export type ServedEvent = {
  /** Hex hash, or null for natural language. */
  hash: string | null;
  document?: ProtocolDocument;
  path: QueryPath;
  body: JsonValue;
  reply?: JsonValue;
  conversationId: string | null;
  turn: number;
  /** True for the first turn of a conversation (or a single-round query). */
  firstTurn: boolean;
};

/** Extensions plug into the receiver here (LLM-written routines, negotiation). */
export type ReceiverExtensions = {
  /** A routine for a PD that has no file in `routines/`. */
  routineFor?(hash: string, document: ProtocolDocument): Promise<RoutineRunner | undefined>;
  /** Called after every answered turn (never awaited by the peer's reply; errors are logged). */
  served?(event: ServedEvent): void | Promise<void>;
  /** Answers a turn of a `"negotiation"` conversation. */
  negotiate?(call: ResponderCall, history: readonly ConversationMessage[], body: JsonValue): Promise<JsonValue>;
};

/** Options of {@link Receiver}. */
export type ReceiverOptions = {
  /** The agent folder: `protocols/`, `routines/`, `tools/`, `.agora/` (default: the current folder). */
  dir?: string;
  /** Shown to the LLM and in logs (default: package.json name, else the folder name). */
  name?: string;
  description?: string;
  store?: ConversationStore;
  /** What the agent learns (default: files under `<dir>/.agora/`). */
  memory?: AgentMemory;
  /** The LLM fallback; none = routines only. */
  llm?: LanguageModel;
  /** Tools in addition to those in `tools/`. */
  tools?: Tool[];
  /** Seconds of inactivity before a conversation expires (default 300). */
  conversationTtl?: number;
  /** Seconds a routine may run (default 10). */
  routineTimeout?: number;
  /** Allow protocol sources on loopback and private networks (default false). */
  allowPrivateSources?: boolean;
  /** This agent's public base URL, for the `/protocols/:hash` sources it lists. */
  publicUrl?: string;
  /** Cap on live conversations (default unlimited). */
  maxConversations?: number;
  /** Messages of history kept per conversation for the LLM (default 40, the latest). */
  maxHistory?: number;
  /** Bound on LLM calls per answer in the tool loop (default 8). */
  maxToolSteps?: number;
  /** Watch `protocols/`, `routines/` and `tools/` for changes (default true). */
  watch?: boolean;
  logger?: Logger;
  metrics?: Metrics;
  extensions?: ReceiverExtensions;
  /** Clock in Unix milliseconds. */
  now?: () => number;
};

type Turn = {
  id: string | null;
  turn: number;
  state: JsonObject;
  history: ConversationMessage[];
};

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
  #name: string;
  #description: string;
  readonly #options: ReceiverOptions;
  readonly #ttlMs: number;
  readonly #routineTimeoutMs: number;
  readonly #maxHistory: number;
  #toolboxCache: Record<string, (input: unknown) => Promise<unknown>> | undefined;
  readonly #loggers = new Map<string, Logger>();
  readonly #now: () => number;
  #routines = new Map<string, LoadedRoutine>();
  #toolFiles = new Map<string, { file: string; digest: string; tools: Tool[] }>();
  #tools: Tool[] = [];
  readonly #suitability = new Map<string, boolean>();
  readonly #judging = new Map<string, Promise<boolean>>();
  readonly #closers: (() => void)[] = [];
  #reloading: Promise<void> = Promise.resolve();
  /** When `/wellknown` last read what other processes learned (performance.now() ms). */
  #sharedReadAt: number | undefined;

  constructor(options: ReceiverOptions = {}) {
    this.#options = options;
    this.dir = resolve(options.dir ?? '.');
    this.logger = options.logger ?? consoleLogger();
    this.#now = options.now ?? Date.now;
    this.#ttlMs = (options.conversationTtl ?? 300) * 1000;
    // Spec §2: an expired id answers "Conversation expired" for at least one TTL.
    this.store = options.store ?? new MemoryConversationStore({ now: this.#now, tombstoneMs: Math.max(DEFAULT_TOMBSTONE_MS, this.#ttlMs) });
    this.memory = options.memory ?? new FileMemory(join(this.dir, '.agora'));
    this.counters = options.metrics ?? new Metrics();
    this.llm = options.llm;
    this.extensions = options.extensions ?? {};
    this.#routineTimeoutMs = (options.routineTimeout ?? 10) * 1000;
    this.#maxHistory = Math.max(2, options.maxHistory ?? 40);
    this.#name = options.name ?? basename(this.dir);
    this.#description = options.description ?? '';
    this.registry = new ProtocolRegistry({
      directory: join(this.dir, 'protocols'),
      memory: this.memory,
      logger: this.logger,
      sources: { allowPrivateSources: options.allowPrivateSources ?? false },
      watch: options.watch ?? true,
    });
  }

  /** Creates a receiver and loads its folder. */
  static async start(options: ReceiverOptions = {}): Promise<Receiver> {
    const receiver = new Receiver(options);
    await receiver.load();
    return receiver;
  }

  /** Loads protocols, routines, tools and what was learned before; starts watching. */
  async load(): Promise<void> {
    await this.#readProfile();
    await Promise.all([this.registry.start(), this.#loadRoutines(), this.#loadTools(), this.#loadVerdicts()]);
    if (this.#options.watch !== false) {
      this.#closers.push(watchFolder(join(this.dir, 'routines'), () => void this.reloadRoutines()));
      this.#closers.push(watchFolder(join(this.dir, 'tools'), () => void this.#queueReload(() => this.#loadTools())));
    }
  }

  async #readProfile(): Promise<void> {
    if (this.#options.name && this.#options.description !== undefined) return;
    try {
      const manifest = JSON.parse(await readFile(join(this.dir, 'package.json'), 'utf8')) as { name?: unknown; description?: unknown; agora?: { name?: unknown; description?: unknown } };
      const name = manifest.agora?.name ?? manifest.name;
      const description = manifest.agora?.description ?? manifest.description;
      if (!this.#options.name && typeof name === 'string') this.#name = name;
      if (this.#options.description === undefined && typeof description === 'string') this.#description = description;
    } catch {
      // A bare folder: the folder name will do.
    }
  }

  /** The `.agora/cache` folder where TypeScript modules are built for import. */
  get cacheDir(): string {
    return join(this.dir, '.agora', 'cache');
  }

  /** The agent's name. */
  get name(): string {
    return this.#name;
  }

  #queueReload(work: () => Promise<void>): Promise<void> {
    this.#reloading = this.#reloading.then(work, work);
    return this.#reloading;
  }

  /** Re-reads `routines/` (the watcher calls it). */
  reloadRoutines(): Promise<void> {
    return this.#queueReload(() => this.#loadRoutines());
  }

  async #loadRoutines(): Promise<void> {
    this.#routines = await loadRoutineFolder(join(this.dir, 'routines'), this.cacheDir, this.logger, this.#routines);
  }

  async #loadTools(): Promise<void> {
    this.#toolFiles = await loadToolFolder(join(this.dir, 'tools'), this.cacheDir, this.logger, this.#toolFiles);
    const byName = new Map<string, Tool>();
    for (const tool of [...[...this.#toolFiles.values()].flatMap((loaded) => loaded.tools), ...(this.#options.tools ?? [])]) {
      if (byName.has(tool.name)) this.logger.warn(`tool ${tool.name} defined twice: the last one wins`);
      byName.set(tool.name, tool);
    }
    this.#tools = [...byName.values()];
    this.#toolboxCache = undefined;
  }

  async #loadVerdicts(): Promise<void> {
    for (const key of await this.memory.keys('suitability/')) {
      if (this.#suitability.has(key.slice('suitability/'.length))) continue;
      const verdict = await this.memory.get<{ suitable: boolean }>(key);
      if (verdict && typeof verdict.suitable === 'boolean') this.#suitability.set(key.slice('suitability/'.length), verdict.suitable);
    }
  }

  /** The agent's tools (from `tools/` and the options). */
  get tools(): readonly Tool[] {
    return this.#tools;
  }

  /** How the agent presents itself to its LLM. */
  profile(): AgentProfile {
    return {
      name: this.#name,
      description: this.#description,
      protocols: this.registry.local().map(({ document }) => ({ name: document.metadata.name, description: document.metadata.description })),
      tools: this.#tools,
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
      ...(signal ? { signal } : {}),
    };
  }

  /** The routine file for a document, when one is in `routines/`. */
  routineFor(known: KnownDocument): LoadedRoutine | undefined {
    return known.name ? this.#routines.get(known.name) : undefined;
  }

  /** The routines loaded from `routines/`, by name. */
  get routines(): ReadonlyMap<string, LoadedRoutine> {
    return this.#routines;
  }

  /** Whether the receiver can answer a document: a routine, an extension routine, or the LLM (with a verdict for learned PDs). */
  async #canAnswer(known: KnownDocument): Promise<boolean> {
    if (this.routineFor(known)) return true;
    if (known.origin === 'local') return this.llm !== undefined || (await this.extensions.routineFor?.(known.document.hash, known.document)) !== undefined;
    const verdict = this.#suitability.get(known.document.hash);
    if (verdict === false) return false;
    if ((await this.extensions.routineFor?.(known.document.hash, known.document)) !== undefined) return true;
    return verdict === true && this.llm !== undefined;
  }

  async wellknown(context?: RequestContext): Promise<Wellknown> {
    // What other processes sharing the memory learned and judged is listed here too (at most one look a second).
    const now = performance.now();
    if (this.#sharedReadAt === undefined || now - this.#sharedReadAt >= 1000) {
      this.#sharedReadAt = now;
      await Promise.all([this.registry.refreshLearned(), this.#loadVerdicts()]).catch((error: unknown) => {
        this.logger.warn(`/wellknown: could not read what other processes learned: ${describeError(error)}`);
      });
    }
    const base = (this.#options.publicUrl ?? context?.baseUrl ?? '').replace(/\/+$/, '');
    const listing: Wellknown = {};
    const candidates: KnownDocument[] = [
      ...this.registry.local().map(({ name, document }) => ({ document, origin: 'local' as const, name })),
      ...this.registry.learned().map((document) => ({ document, origin: 'learned' as const })),
    ];
    for (const known of candidates) {
      if (!(await this.#canAnswer(known))) continue;
      const sources: string[] = [];
      if (base) sources.push(`${base}/protocols/${known.document.hash}`);
      const extra = known.document.metadata.sources;
      if (Array.isArray(extra)) for (const source of extra) if (typeof source === 'string' && !sources.includes(source)) sources.push(source);
      if (!sources.length) sources.push(`/protocols/${known.document.hash}`);
      listing[known.document.hash] = sources;
    }
    return listing;
  }

  async document(hash: string): Promise<string | undefined> {
    const normalized = normalizeHash(hash);
    if (!normalized) return undefined;
    const known = this.registry.get(normalized) ?? (await this.registry.resolve(normalized, []));
    return known?.document.text;
  }

  async metrics(): Promise<string> {
    return this.counters.render();
  }

  async query(request: QueryRequest, context?: RequestContext): Promise<SuccessResponse> {
    const hash = request.protocolHash ?? null;
    let known: KnownDocument | undefined;
    if (hash !== null && hash !== 'negotiation') {
      const normalized = normalizeHash(hash);
      known = normalized ? await this.registry.resolve(normalized, request.protocolSources) : undefined;
      if (!known) return this.#fail('UNSUPPORTED_PROTOCOL', 'unknown');
      await this.#checkServable(known);
    } else if (hash === null && !this.llm) {
      return this.#fail('NATURAL_LANGUAGE_UNSUPPORTED', NATURAL_LANGUAGE);
    } else if (hash === 'negotiation' && (!this.llm || !this.extensions.negotiate)) {
      return this.#fail('UNSUPPORTED_PROTOCOL', 'negotiation');
    }
    // Python senders send `multiround: true` on natural language too; a negotiation is always multiround.
    const multiround = request.multiround === true || hash === 'negotiation';
    if (multiround && this.#options.maxConversations !== undefined && (await this.store.count()) >= this.#options.maxConversations) {
      return this.#fail('TOO_MANY_CONVERSATIONS', known?.document.metadata.name ?? NATURAL_LANGUAGE);
    }
    const id = multiround ? nanoid(24) : null;
    const turn: Turn = { id, turn: 1, state: {}, history: [] };
    const protocolHash = hash === 'negotiation' ? 'negotiation' : (known?.document.hash ?? null);
    const reply = await this.#answer(protocolHash, known, turn, request.body, context);
    if (!id) return { status: 'success', body: reply };
    const now = this.#now();
    const expiresAt = now + this.#ttlMs;
    await this.store.create({ id, protocolHash, createdAt: now, expiresAt, turn: 1, state: turn.state, history: turn.history });
    return { status: 'success', body: reply, conversationId: id, conversationExpires: Math.floor(expiresAt / 1000) };
  }

  async followUp(id: string, request: FollowUpRequest, context?: RequestContext): Promise<SuccessResponse> {
    const named = request.protocolHash === undefined || request.protocolHash === null ? undefined : request.protocolHash === 'negotiation' ? 'negotiation' : (normalizeHash(request.protocolHash) ?? request.protocolHash);
    // Everything happens inside the turn: one read of the record, under the conversation's lock.
    const reply = await this.store.runTurn(id, this.#ttlMs, async (current) => {
      if (named !== undefined && named !== current.protocolHash) throw new AgoraError('PROTOCOL_CHANGED');
      let known: KnownDocument | undefined;
      if (current.protocolHash && current.protocolHash !== 'negotiation') {
        known = this.registry.get(current.protocolHash) ?? (await this.registry.resolve(current.protocolHash, request.protocolSources));
        if (!known) this.#fail('UNSUPPORTED_PROTOCOL', 'unknown');
      }
      const turn: Turn = { id, turn: current.turn + 1, state: current.state, history: current.history };
      const body = await this.#answer(current.protocolHash, known, turn, request.body, context);
      return { result: body, state: turn.state, history: turn.history };
    });
    const expires = Math.floor((this.#now() + this.#ttlMs) / 1000);
    return { status: 'success', body: reply, conversationId: id, conversationExpires: expires };
  }

  async end(id: string): Promise<void> {
    if (!(await this.store.delete(id))) {
      await this.store.get(id); // throws EXPIRED or NOT_FOUND
    }
  }

  /** Refuses a learned PD judged unsuitable, judging it first when needed (spec §4). */
  async #checkServable(known: KnownDocument): Promise<void> {
    if (known.origin === 'local' || this.routineFor(known)) return;
    const hash = known.document.hash;
    if ((await this.extensions.routineFor?.(hash, known.document)) !== undefined) return;
    if (!this.llm) this.#fail('UNSUPPORTED_PROTOCOL', known.document.metadata.name);
    if (!(await this.#judge(known.document))) this.#fail('UNSUPPORTED_PROTOCOL', known.document.metadata.name);
  }

  /** The suitability verdict for a learned PD: remembered per hash, judged once even under concurrent queries. */
  async #judge(document: ProtocolDocument): Promise<boolean> {
    const hash = document.hash;
    const cached = this.#suitability.get(hash);
    if (cached !== undefined) return cached;
    const shared = await this.memory.get<{ suitable: boolean }>(`suitability/${hash}`);
    if (shared && typeof shared.suitable === 'boolean') {
      this.#suitability.set(hash, shared.suitable);
      return shared.suitable;
    }
    let pending = this.#judging.get(hash);
    if (!pending) {
      pending = (async () => {
        const verdict = await judgeSuitability(this.responderCall(document.metadata.name, 'suitability'), document);
        this.#suitability.set(hash, verdict.suitable);
        await this.memory.set(`suitability/${hash}`, { suitable: verdict.suitable, reason: verdict.reason, judgedAt: new Date().toISOString() });
        this.logger.info(`protocol "${document.metadata.name}" ${hash} judged ${verdict.suitable ? 'suitable' : 'unsuitable'}`);
        return verdict.suitable;
      })().finally(() => this.#judging.delete(hash));
      this.#judging.set(hash, pending);
    }
    return pending;
  }

  #fail(code: 'UNSUPPORTED_PROTOCOL' | 'NATURAL_LANGUAGE_UNSUPPORTED' | 'TOO_MANY_CONVERSATIONS', label: string): never {
    this.counters.query('failure', label);
    throw new AgoraError(code);
  }

  #toolbox(signal?: AbortSignal): Record<string, (input: unknown) => Promise<unknown>> {
    const build = (toolSignal?: AbortSignal) => {
      const toolbox: Record<string, (input: unknown) => Promise<unknown>> = {};
      for (const tool of this.#tools) toolbox[tool.name] = (input) => callTool(tool, input, toolSignal ? { signal: toolSignal } : {});
      return Object.freeze(toolbox);
    };
    // The common case (no client signal) shares one frozen toolbox: nothing to allocate per query.
    if (signal) return build(signal);
    return (this.#toolboxCache ??= build());
  }

  #routineLogger(name: string): Logger {
    let logger = this.#loggers.get(name);
    if (!logger) {
      logger = prefixed(this.logger, `routine ${name}`);
      this.#loggers.set(name, logger);
    }
    return logger;
  }

  /** Answers one turn, recording history and metrics; mutates `turn.state` and `turn.history`. */
  async #answer(protocolHash: string | null, known: KnownDocument | undefined, turn: Turn, body: JsonValue, context?: RequestContext): Promise<JsonValue> {
    const label = protocolHash === 'negotiation' ? 'negotiation' : (known?.document.metadata.name ?? NATURAL_LANGUAGE);
    let path: QueryPath = 'failure';
    let reply: JsonValue | undefined;
    try {
      reply = await this.#dispatch(protocolHash, known, turn, body, label, context, (chosen) => (path = chosen));
      // The LLM reads the history; a conversation under a routine from routines/ never reaches the LLM (a
      // failing routine answers `Routine failed`), so its turns skip the cost of carrying it.
      if (!(known && this.routineFor(known))) {
        turn.history.push({ role: 'peer', body }, { role: 'agent', body: reply });
        // Bounded: a long conversation must not grow its record (and every turn's copy) forever.
        if (turn.history.length > this.#maxHistory) turn.history.splice(0, turn.history.length - this.#maxHistory);
      }
      return reply;
    } catch (error) {
      path = 'failure';
      if (isAgoraError(error) && (error.code === 'ROUTINE_FAILED' || error.code === 'LLM_UNAVAILABLE' || error.code === 'INTERNAL')) {
        this.logger.error(`${label}: ${error.message}${error.cause ? `: ${describeError(error.cause)}` : ''}`);
      } else if (!isAgoraError(error)) {
        this.logger.error(`${label}: ${describeError(error)}`);
        throw new AgoraError('INTERNAL', undefined, { cause: error });
      }
      throw error;
    } finally {
      this.counters.query(path, label);
      if (this.extensions.served && protocolHash !== 'negotiation') {
        const event: ServedEvent = {
          hash: known?.document.hash ?? null,
          path,
          body,
          conversationId: turn.id,
          turn: turn.turn,
          firstTurn: turn.turn === 1,
          ...(known ? { document: known.document } : {}),
          ...(reply !== undefined ? { reply } : {}),
        };
        Promise.resolve()
          .then(() => this.extensions.served?.(event))
          .catch((error: unknown) => this.logger.error(`served hook failed: ${describeError(error)}`));
      }
    }
  }

  async #dispatch(
    protocolHash: string | null,
    known: KnownDocument | undefined,
    turn: Turn,
    body: JsonValue,
    label: string,
    context: RequestContext | undefined,
    setPath: (path: QueryPath) => void,
  ): Promise<JsonValue> {
    if (protocolHash === 'negotiation') {
      setPath('llm');
      return this.extensions.negotiate!(this.responderCall('negotiation', 'negotiation', context?.signal), turn.history, body);
    }
    if (!known) {
      if (!this.llm) throw new AgoraError('NATURAL_LANGUAGE_UNSUPPORTED');
      setPath('llm');
      return answerNaturalLanguage(this.responderCall(NATURAL_LANGUAGE, 'answer', context?.signal), turn.history, body);
    }
    const document = known.document;
    const routineContext: Omit<RoutineContext, 'signal'> = {
      conversation: { id: turn.id, turn: turn.turn, state: turn.state },
      protocol: { name: document.metadata.name, hash: document.hash, metadata: document.metadata },
      logger: this.#routineLogger(known.name ?? document.hash.slice(0, 8)),
      tools: this.#toolbox(context?.signal),
    };
    const file = this.routineFor(known);
    if (file) {
      setPath('routine');
      return this.#timed(label, () => runRoutine(file.routine, body, routineContext, document, this.#routineTimeoutMs));
    }
    const runner = await this.extensions.routineFor?.(document.hash, document);
    if (runner) {
      try {
        const reply = await this.#timed(label, () => runner(body, routineContext));
        setPath('routine');
        return reply;
      } catch (error) {
        if (isAgoraError(error) && error.code === 'BAD_REQUEST') throw error;
        this.logger.warn(`${label}: generated routine failed, falling back to the LLM: ${describeError(error instanceof Error && error.cause ? error.cause : error)}`);
        if (!this.llm) throw new AgoraError('ROUTINE_FAILED', 'Routine failed', { cause: error });
      }
    }
    if (!this.llm) throw new AgoraError('UNSUPPORTED_PROTOCOL');
    setPath('llm');
    return answerUnderProtocol(this.responderCall(label, 'answer', context?.signal), document, turn.history, body);
  }

  async #timed<T>(label: string, work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await work();
    } finally {
      this.counters.routineLatency(label, (performance.now() - started) / 1000);
    }
  }

  /** Stops watching and closes the store and memory. */
  async close(): Promise<void> {
    for (const close of this.#closers.splice(0)) close();
    this.registry.close();
    await this.#reloading.catch(() => undefined);
    await this.store.close();
    await this.memory.close();
  }
}

function prefixed(logger: Logger, prefix: string): Logger {
  return {
    info: (message) => logger.info(`${prefix}: ${message}`),
    warn: (message) => logger.warn(`${prefix}: ${message}`),
    error: (message) => logger.error(`${prefix}: ${message}`),
  };
}
