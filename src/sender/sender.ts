import { join, resolve } from 'node:path';
import { withDefaults } from '../_defaults.js';
import { AgoraError, describeError } from '../errors.js';
import type { LanguageModel, UsageSink } from '../llm/model.js';
import { consoleLogger, type Logger } from '../log.js';
import { FileMemory, InMemoryMemory, type AgentMemory } from '../memory/file.js';
import type { NegotiationTask } from '../negotiation.js';
import type { TokenSource } from '../net/token-source.js';
import { normalizeHash, type ProtocolDocument } from '../protocol/document.js';
import { toJsonValue, type Wellknown } from '../schemas.js';
import { openConversation, sendQuery, type SenderConversation } from './conversation.js';
import { SenderDocuments } from './documents.js';
import { SENDER_DEFAULTS, type SenderThresholds } from './config.js';
import { HubProtocols, type ProtocolHub } from './hub.js';
import { negotiateWithPeer, type NegotiationParts, type SenderNegotiation } from './negotiate.js';
import { TaskRunner, type SenderExtensions, type TaskFunction, type TaskSpec, type TaskState } from './tasks.js';
import { streamPost, type SenderStreamEvent } from './stream.js';
import { agentBaseUrl, PeerTransport, type QueryResult } from './transport.js';

export { SENDER_DEFAULTS } from './config.js';
export { agentBaseUrl, DEFAULT_SENDER_TIMEOUT_MS, type QueryResult } from './transport.js';
export type { SenderConversation } from './conversation.js';
export type { SenderNegotiation } from './negotiate.js';
export { HubProtocols, type HubListing, type ProtocolHub } from './hub.js';
export type { SenderStreamEvent } from './stream.js';

/** The URL a query is posted to: as given, only normalised by the URL parser (`http://host` → `http://host/`), no fragment. */
function exactUrl(url: string): string {
  const parsed = new URL(url);
  parsed.hash = '';
  return parsed.href;
}

/** The sender's hub: the option as given, a URL made a client (the CLI passes AGORA_HUB), else none. */
function hubOf(options: SenderOptions, timeoutMs: number): ProtocolHub | undefined {
  const hub = options.hub ?? undefined;
  if (hub === undefined || typeof hub !== 'string') return hub;
  return new HubProtocols({ url: hub, token: options.hubToken, fetch: options.fetch, timeoutMs });
}

/** Options of {@link Sender}. */
export type SenderOptions = {
  /**
   * The LLM that writes queries, reads replies, judges PDs and negotiates (default none: plain queries only; pass
   * `chooseModel(options, process.env)` for the one `agora serve` would pick); `null` = none as well.
   */
  llm?: LanguageModel | null;
  /** Where task counters and fetched PDs are kept (default: `<dir>/.agora/`, else in this process only). */
  memory?: AgentMemory;
  /** The agent folder: its `protocols/` are candidate PDs and receive negotiated ones. */
  dir?: string;
  /** This agent's own base URL when it runs a receiver: its `/protocols/:hash` URL is added to the sources. */
  publicUrl?: string;
  /** The connector under the one outbound client (default `globalThis.fetch`). */
  fetch?: typeof fetch;
  /** Bound on each HTTP exchange with a peer, in ms (default 30 000). */
  timeoutMs?: number;
  /** Bearer token for peers (an agent started with `--token`); `agora send` passes `--token`, AGORA_TOKEN. */
  token?: string;
  /**
   * The origin (or origins) the token belongs to: requests elsewhere go without it (`agora send` passes the origin
   * of its URL). Default: the origin of each query's URL; never a redirect's other origin.
   */
  tokenOrigin?: string | readonly string[];
  /**
   * Where a token renewed over time comes from (`ClientCredentials`: the client-credentials grant), asked before each
   * request to `tokenOrigin`; wins over `token`. `agora send --client-id` passes one.
   */
  tokenSource?: TokenSource;
  /** Headers sent with every request to a peer (a gateway's key, a tracing id). */
  headers?: Record<string, string>;
  /** Largest reply read from a peer, in bytes, after decompression (default 16 MiB). */
  maxReplyBytes?: number;
  logger?: Logger;
  thresholds?: SenderThresholds;
  /** Messages sent to the peer in a negotiation before giving up (default 10). */
  maxNegotiationRounds?: number;
  extensions?: SenderExtensions;
  /** Called after each LLM call with its token counts. */
  onUsage?: UsageSink;
  /**
   * A hub whose protocol database a typed task searches for a fitting PD before negotiating, and to which a
   * negotiated PD is published: its URL or a {@link ProtocolHub} (default none; `agora negotiate` passes `--hub`,
   * AGORA_HUB). A hub that fails or answers slower than `hubTimeoutMs` is skipped with a warning.
   */
  hub?: string | ProtocolHub | null;
  /** Bearer token for a hub given by URL (`agora negotiate` passes AGORA_HUB_TOKEN). */
  hubToken?: string;
  /** Bound on each exchange with the hub, in ms (default 2 000). */
  hubTimeoutMs?: number;
};

/** Options of {@link Sender.query}. */
export type QueryOptions = {
  /** The PD (parsed, or its exact text); none = natural language. */
  protocol?: ProtocolDocument | string;
  /** The query: a string or any JSON value. */
  body: unknown;
  /** Start a conversation (then close it with a DELETE, or use {@link Sender.conversation}). */
  multiround?: boolean;
  signal?: AbortSignal;
};

/** Options of {@link Sender.stream}: a query's, or the next turn of a conversation when `conversationId` is set. */
export type StreamQueryOptions = QueryOptions & { conversationId?: string };

/** A protocol a peer lists at `/wellknown`, with its document when the peer serves it. */
export type PeerProtocol = { hash: string; sources: string[]; document?: ProtocolDocument };

/** LLM usage so far. */
export type SenderUsage = { llmCalls: number; inputTokens: number; outputTokens: number };

/**
 * The client side of Agora: queries and conversations with discovery of the peer's hash encoding, and typed
 * tasks that go from natural language to a fitting or negotiated protocol as they are used. It composes the
 * peer transport (transport.ts), the documents (documents.ts) and the typed tasks (tasks.ts).
 * @example
 * const sender = new Sender({ llm, dir: '.' });
 * const { body } = await sender.query('http://localhost:3000', { protocol: weatherText, body: { city: 'Paris' } });
 */
export class Sender {
  readonly llm: LanguageModel | undefined;
  readonly memory: AgentMemory;
  readonly dir: string | undefined;
  readonly logger: Logger;
  readonly extensions: SenderExtensions;
  /** The hub asked for protocols before negotiating, if any. */
  readonly hub: ProtocolHub | undefined;
  readonly #options: SenderOptions;
  readonly #timeoutMs: number;
  readonly #parts: NegotiationParts;
  readonly #tasks: TaskRunner;
  readonly #usage: SenderUsage = { llmCalls: 0, inputTokens: 0, outputTokens: 0 };
  /** Counts every LLM call of this sender, then tells `options.onUsage`. */
  readonly #countUsage: UsageSink = (usage) => {
    this.#usage.llmCalls += 1;
    this.#usage.inputTokens += usage.inputTokens;
    this.#usage.outputTokens += usage.outputTokens;
    try {
      this.#options.onUsage?.(usage);
    } catch (error) {
      this.logger.error(`onUsage failed: ${describeError(error)}`);
    }
  };

  constructor(options: SenderOptions = {}) {
    this.#options = options;
    const config = withDefaults(SENDER_DEFAULTS, options);
    this.#timeoutMs = config.timeoutMs;
    this.llm = options.llm ?? undefined;
    this.dir = options.dir === undefined ? undefined : resolve(options.dir);
    this.memory = options.memory ?? (this.dir ? new FileMemory(join(this.dir, '.agora')) : new InMemoryMemory());
    this.logger = options.logger ?? consoleLogger();
    this.extensions = options.extensions ?? {};
    const transport = new PeerTransport({
      fetch: options.fetch,
      timeoutMs: config.timeoutMs,
      token: options.token,
      tokenOrigin: options.tokenOrigin,
      tokenSource: options.tokenSource,
      headers: options.headers,
      maxReplyBytes: config.maxReplyBytes,
    });
    const documents = new SenderDocuments({
      transport,
      memory: this.memory,
      logger: this.logger,
      dir: this.dir,
      publicUrl: options.publicUrl,
    });
    this.hub = hubOf(options, config.hubTimeoutMs);
    this.#parts = {
      transport,
      documents,
      logger: this.logger,
      llm: this.llm,
      dir: this.dir,
      maxNegotiationRounds: config.maxNegotiationRounds,
      hub: this.hub,
    };
    this.#tasks = new TaskRunner(
      { ...this.#parts, memory: this.memory, extensions: this.extensions, onUsage: this.#countUsage },
      withDefaults(SENDER_DEFAULTS.thresholds, options.thresholds ?? {}),
    );
  }

  /** LLM calls and tokens so far, cumulative. */
  usage(): SenderUsage {
    return { ...this.#usage };
  }

  /**
   * Sends one query, posted to `url` exactly as given (an agent's base URL, or any Agora endpoint), and returns the
   * peer's reply; a failure is AgoraError('PEER_FAILURE', `POST <url>: HTTP <status>: <peer's text>`).
   */
  async query(url: string, options: QueryOptions): Promise<QueryResult> {
    const base = agentBaseUrl(url);
    return sendQuery(this.#parts, base, { ...options, body: toJsonValue(options.body, 'body') }, exactUrl(url));
  }

  /**
   * Sends a query (or a conversation's next turn) asking for a streamed reply: yields its pieces as the peer writes
   * them, then `done` with the whole reply. A dropped connection of a conversation is resumed once by itself; a peer
   * that does not stream gives its reply as one piece. Each wait for the next piece is bounded by `timeoutMs`.
   * @example for await (const event of sender.stream(url, { body: 'Tell me a story' })) if (event.type === 'delta') process.stdout.write(String(event.delta));
   */
  async *stream(url: string, options: StreamQueryOptions): AsyncGenerator<SenderStreamEvent> {
    const base = agentBaseUrl(url);
    const body = toJsonValue(options.body, 'body');
    const fields = await this.#parts.documents.protocolFields(base, options.protocol, options.signal);
    const path =
      options.conversationId === undefined ? '/' : `/conversations/${encodeURIComponent(options.conversationId)}`;
    const payload = {
      ...fields,
      body,
      ...(options.multiround && options.conversationId === undefined ? { multiround: true } : {}),
    };
    yield* streamPost(this.#parts.transport.client, base, path, payload, {
      idleTimeoutMs: this.#timeoutMs,
      signal: options.signal,
    });
  }

  /**
   * A multiround conversation under a PD (or in natural language).
   * @example const chat = sender.conversation(url); await chat.send('Hello'); await chat.send('And tomorrow?'); await chat.close();
   */
  conversation(url: string, protocol?: ProtocolDocument | string): SenderConversation {
    const base = agentBaseUrl(url);
    return openConversation(
      this.#parts.transport,
      base,
      (signal) => this.#parts.documents.peerFields(base, protocol, signal),
      exactUrl(url),
    );
  }

  /** The peer's `/wellknown` listing as it gives it (hash → sources); a peer without one (404) is an error. */
  async wellknown(url: string, signal?: AbortSignal): Promise<Wellknown> {
    const base = agentBaseUrl(url);
    const listing = await this.#parts.documents.listing(base, signal);
    if (listing === undefined)
      throw new AgoraError(
        'PEER_FAILURE',
        `GET ${base}/wellknown: HTTP 404: the peer lists no protocols (a Python SDK peer?)`,
        { status: 404 },
      );
    return listing;
  }

  /** The peer's protocols (hex hashes), each with its document when the peer serves it and it hashes right. */
  async protocols(url: string, signal?: AbortSignal): Promise<PeerProtocol[]> {
    const base = agentBaseUrl(url);
    const listing = await this.wellknown(base, signal);
    const protocols: PeerProtocol[] = [];
    for (const [key, sources] of Object.entries(listing)) {
      const hash = normalizeHash(key);
      if (!hash) {
        this.logger.warn(`${base}/wellknown: ${JSON.stringify(key.slice(0, 64))} is not a protocol hash`);
        continue;
      }
      const document = await this.#parts.documents.peer(base, hash, sources, signal);
      protocols.push({ hash, sources, ...(document ? { document } : {}) });
    }
    return protocols;
  }

  /**
   * Negotiates a PD for a task with a peer (spec §5) and writes it into `<dir>/protocols/` when the sender has a
   * folder.
   * @example const { document, path } = await sender.negotiate(url, { name: 'Weather', description: 'Forecast for a city' });
   */
  async negotiate(
    url: string,
    task: NegotiationTask,
    options: {
      maxRounds?: number;
      onRound?: (round: number, proposal: string, answer: string) => void;
      signal?: AbortSignal;
    } = {},
  ): Promise<SenderNegotiation> {
    return negotiateWithPeer(this.#parts, agentBaseUrl(url), task, { ...options, onUsage: this.#countUsage });
  }

  /**
   * A typed task: natural language first, then a fitting PD from the `lookForProtocolFrom`-th use, then a negotiated
   * one from the `negotiateFrom`-th; counters and choices persist in the sender's memory.
   * @example
   * const forecast = sender.task({ name: 'Forecast', description: 'Weather in a city', input: z.object({ city:
   * z.string() }), output: z.object({ weather: z.string() }) }); const { weather } = await forecast({ city: 'Paris' },
   * { target: 'http://localhost:3000' });
   */
  task<Input, Output>(spec: TaskSpec<Input, Output>): TaskFunction<Input, Output> {
    return this.#tasks.task(spec);
  }

  /** What a task remembers about a target. */
  taskState(taskName: string, target: string): Promise<TaskState> {
    return this.#tasks.state(taskName, target);
  }

  /** Closes the memory (a no-op for files). */
  async close(): Promise<void> {
    await this.memory.close();
  }
}
