import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { AgoraError, describeError, isAgoraError } from '../errors.js';
import type { LanguageModel, UsageSink } from '../llm/toolformer.js';
import { consoleLogger, type Logger } from '../log.js';
import { FileMemory, InMemoryMemory, type AgentMemory } from '../memory/file.js';
import { negotiateProtocol, writeProtocolFile, type NegotiationMessage, type NegotiationTask } from '../negotiation.js';
import { encodeHash, hashEncodingOf, hashText, normalizeHash, parseDocument, type HashEncoding, type ProtocolDocument } from '../protocol/document.js';
import { decodeDataUri, encodeDataUri, fetchSource } from '../protocol/sources.js';
import { jsonText, peerResponseSchema, toJsonValue, wellknownSchema, type JsonValue, type Wellknown } from '../schemas.js';
import { TaskRunner, type SenderExtensions, type SenderThresholds, type TaskFunction, type TaskSpec, type TaskState } from './tasks.js';

/** The default bound on one HTTP exchange with a peer: 30 s. */
export const DEFAULT_SENDER_TIMEOUT_MS = 30_000;

// A reply larger than this is not an Agora reply; a PD larger than the receivers' source cap is no PD.
const MAX_REPLY_BYTES = 16 * 1024 * 1024;
const MAX_DOCUMENT_BYTES = 256 * 1024;

/** Options of {@link Sender}. */
export type SenderOptions = {
  /** The LLM that writes queries, reads replies, judges PDs and negotiates; none = plain queries only. */
  llm?: LanguageModel;
  /** Where task counters and fetched PDs are kept (default: `<dir>/.agora/`, else in this process only). */
  memory?: AgentMemory;
  /** The agent folder: its `protocols/` are candidate PDs and receive negotiated ones. */
  dir?: string;
  /** This agent's own base URL when it runs a receiver: its `/protocols/:hash` URL is added to the sources. */
  publicUrl?: string;
  fetch?: typeof fetch;
  /** Bound on each HTTP exchange with a peer, in ms (default 30 000). */
  timeoutMs?: number;
  logger?: Logger;
  thresholds?: SenderThresholds;
  /** Messages sent to the peer in a negotiation before giving up (default 10). */
  maxNegotiationRounds?: number;
  extensions?: SenderExtensions;
  /** Called after each LLM call with its token counts. */
  onUsage?: UsageSink;
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

/** A peer's success reply. */
export type QueryResult = { body: JsonValue; conversationId?: string; conversationExpires?: number };

/** A multiround conversation with a peer: the first `send` starts it, `close` ends it (idempotent). */
export type SenderConversation = {
  /** The peer's conversation id, once the first turn is answered. */
  readonly id: string | undefined;
  send(body: unknown, options?: { signal?: AbortSignal }): Promise<QueryResult>;
  close(): Promise<void>;
};

/** A protocol a peer lists at `/wellknown`, with its document when the peer serves it. */
export type PeerProtocol = { hash: string; sources: string[]; document?: ProtocolDocument };

/** LLM usage so far. */
export type SenderUsage = { llmCalls: number; inputTokens: number; outputTokens: number };

/** The outcome of {@link Sender.negotiate}: the agreed PD and where it was written. */
export type SenderNegotiation = { document: ProtocolDocument; rounds: number; transcript: NegotiationMessage[]; path?: string };

type ProtocolFields = { protocolHash: string | null; protocolSources: string[] };

const NEGOTIATION: ProtocolFields = { protocolHash: 'negotiation', protocolSources: [] };
const NATURAL_LANGUAGE: ProtocolFields = { protocolHash: null, protocolSources: [] };

/** An agent's base URL without a trailing slash, query or fragment (`http://host/agora`). */
export function agentBaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new AgoraError('BAD_REQUEST', `Not a URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new AgoraError('BAD_REQUEST', `Not an http(s) URL: ${url}`);
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}`;
}

function encodingOf(listing: Wellknown | undefined): HashEncoding {
  if (listing === undefined) return 'base64';
  const keys = Object.keys(listing);
  return keys.length > 0 && keys.every((key) => hashEncodingOf(key) === 'base64') ? 'base64' : 'hex';
}

function isGone(error: unknown): boolean {
  return isAgoraError(error) && error.code === 'PEER_FAILURE' && (error.status === 404 || /^Conversation (not found|expired)/i.test(error.message));
}

/**
 * The client side of Agora: queries and conversations with discovery of the peer's hash encoding, and typed
 * tasks that go from natural language to a fitting or negotiated protocol as they are used.
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
  readonly #options: SenderOptions;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;
  readonly #publicUrl: string | undefined;
  readonly #encodings = new Map<string, Promise<HashEncoding>>();
  readonly #documents = new Map<string, ProtocolDocument>();
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
    this.llm = options.llm;
    this.dir = options.dir === undefined ? undefined : resolve(options.dir);
    this.memory = options.memory ?? (this.dir ? new FileMemory(join(this.dir, '.agora')) : new InMemoryMemory());
    this.logger = options.logger ?? consoleLogger();
    this.extensions = options.extensions ?? {};
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_SENDER_TIMEOUT_MS;
    this.#publicUrl = options.publicUrl?.replace(/\/+$/, '');
    this.#tasks = new TaskRunner(
      {
        llm: this.llm,
        memory: this.memory,
        logger: this.logger,
        extensions: this.extensions,
        baseUrl: agentBaseUrl,
        send: (base, document, body, signal) => this.#sendOnce(base, document, body, signal),
        negotiate: (base, task, onUsage, signal) => this.#negotiate(base, task, { onUsage, ...(signal ? { signal } : {}) }),
        listing: (base, signal) => this.#readWellknown(base, signal),
        peerDocument: (base, hash, sources, signal) => this.#peerDocument(base, hash, sources, signal),
        knownDocument: (hash, base, signal) => this.#knownDocument(hash, base, signal),
        localDocuments: () => this.#localDocuments(),
        onUsage: this.#countUsage,
      },
      options.thresholds,
    );
  }

  /** LLM calls and tokens so far, cumulative. */
  usage(): SenderUsage {
    return { ...this.#usage };
  }

  /** Sends one query (`POST /`) and returns the peer's reply; a failure is AgoraError('PEER_FAILURE', <peer's text>). */
  async query(url: string, options: QueryOptions): Promise<QueryResult> {
    const base = agentBaseUrl(url);
    const fields = await this.#protocolFields(base, options.protocol, options.signal);
    return this.#post(`${base}/`, { ...fields, body: toJsonValue(options.body, 'body'), ...(options.multiround ? { multiround: true } : {}) }, options.signal);
  }

  /**
   * A multiround conversation under a PD (or in natural language).
   * @example const chat = sender.conversation(url); await chat.send('Hello'); await chat.send('And tomorrow?'); await chat.close();
   */
  conversation(url: string, protocol?: ProtocolDocument | string): SenderConversation {
    const base = agentBaseUrl(url);
    return this.#open(base, (signal) => this.#protocolFields(base, protocol, signal));
  }

  #open(base: string, fieldsOf: (signal?: AbortSignal) => Promise<ProtocolFields>): SenderConversation {
    let id: string | undefined;
    let started = false;
    let closing: Promise<void> | undefined;
    let fields: Promise<ProtocolFields> | undefined;
    // Turns go one after the other: a second send while the first is under way must not start another conversation.
    let queue: Promise<unknown> = Promise.resolve();
    const turn = async (value: JsonValue, signal?: AbortSignal): Promise<QueryResult> => {
      fields ??= fieldsOf(signal);
      const protocol = await fields;
      if (!started) {
        // A first turn that fails starts nothing: the next send tries to start the conversation again.
        const result = await this.#post(`${base}/`, { ...protocol, body: value, multiround: true }, signal);
        started = true;
        id = result.conversationId;
        return result;
      }
      if (id === undefined) throw new AgoraError('PEER_FAILURE', `POST ${base}/: the peer started no conversation (no conversationId in its reply)`);
      // The hash and sources are repeated: the Python receiver requires both on every request, ours accepts them.
      const result = await this.#post(`${base}/conversations/${encodeURIComponent(id)}`, { ...protocol, body: value }, signal);
      if (result.conversationId) id = result.conversationId;
      return result;
    };
    return {
      get id() {
        return id;
      },
      send: (body, options) => {
        if (closing) return Promise.reject(new AgoraError('BAD_REQUEST', `the conversation with ${base} is closed`));
        let value: JsonValue;
        try {
          value = toJsonValue(body, 'body');
        } catch (error) {
          return Promise.reject(error);
        }
        const next = queue.then(() => turn(value, options?.signal));
        queue = next.catch(() => undefined);
        return next;
      },
      close: () => {
        closing ??= queue.then(async () => {
          if (id === undefined) return;
          const url = `${base}/conversations/${encodeURIComponent(id)}`;
          const response = await this.#exchange('DELETE', url);
          // Any 2xx ends it, whatever the body says (an expired or already closed conversation is over all the same).
          if (response.status >= 200 && response.status < 300) return;
          let json: unknown;
          try {
            json = this.#parseJson('DELETE', url, response);
          } catch (error) {
            if (response.status === 404) return;
            throw error;
          }
          const error = this.#peerError('DELETE', url, response.status, json);
          if (!isGone(error)) throw error;
        });
        return closing;
      },
    };
  }

  /** The peer's `/wellknown` listing as it gives it (hash → sources); a peer without one (404) is an error. */
  async wellknown(url: string, signal?: AbortSignal): Promise<Wellknown> {
    const base = agentBaseUrl(url);
    const listing = await this.#readWellknown(base, signal);
    if (listing === undefined) throw new AgoraError('PEER_FAILURE', `GET ${base}/wellknown: HTTP 404: the peer lists no protocols (a Python SDK peer?)`, { status: 404 });
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
      const document = await this.#peerDocument(base, hash, sources, signal);
      protocols.push({ hash, sources, ...(document ? { document } : {}) });
    }
    return protocols;
  }

  /**
   * Negotiates a PD for a task with a peer (spec §5) and writes it into `<dir>/protocols/` when the sender has a folder.
   * @example const { document, path } = await sender.negotiate(url, { name: 'Weather', description: 'Forecast for a city' });
   */
  async negotiate(
    url: string,
    task: NegotiationTask,
    options: { maxRounds?: number; onRound?: (round: number, proposal: string, answer: string) => void; signal?: AbortSignal } = {},
  ): Promise<SenderNegotiation> {
    return this.#negotiate(agentBaseUrl(url), task, options);
  }

  async #negotiate(
    base: string,
    task: NegotiationTask,
    options: { maxRounds?: number; onRound?: (round: number, proposal: string, answer: string) => void; signal?: AbortSignal; onUsage?: UsageSink },
  ): Promise<SenderNegotiation> {
    if (!this.llm) throw new AgoraError('LLM_UNAVAILABLE', 'Negotiating a protocol needs an LLM');
    const conversation = this.#open(base, async () => NEGOTIATION);
    let result;
    try {
      const maxRounds = options.maxRounds ?? this.#options.maxNegotiationRounds;
      result = await negotiateProtocol({
        llm: this.llm,
        task,
        send: async (message) => jsonText((await conversation.send(message, options.signal ? { signal: options.signal } : {})).body),
        onUsage: options.onUsage ?? this.#countUsage,
        ...(maxRounds !== undefined ? { maxRounds } : {}),
        ...(options.onRound ? { onRound: options.onRound } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
    } finally {
      await conversation.close().catch((error: unknown) => this.logger.warn(`closing the negotiation with ${base}: ${describeError(error)}`));
    }
    await this.#remember(result.document);
    const path = this.dir ? await writeProtocolFile(this.dir, result.document) : undefined;
    this.logger.info(`negotiated protocol "${result.document.metadata.name}" ${result.document.hash} with ${base} in ${result.rounds} rounds`);
    return { ...result, ...(path ? { path } : {}) };
  }

  /**
   * A typed task: natural language first, then a fitting PD from the `lookForProtocolFrom`-th use, then a negotiated
   * one from the `negotiateFrom`-th; counters and choices persist in the sender's memory.
   * @example
   * const forecast = sender.task({ name: 'Forecast', description: 'Weather in a city', input: z.object({ city: z.string() }), output: z.object({ weather: z.string() }) });
   * const { weather } = await forecast({ city: 'Paris' }, { target: 'http://localhost:3000' });
   */
  task<Input, Output>(spec: TaskSpec<Input, Output>): TaskFunction<Input, Output> {
    return this.#tasks.task(spec);
  }

  /** What a task remembers about a target. */
  taskState(taskName: string, target: string): Promise<TaskState> {
    return this.#tasks.state(taskName, target);
  }

  /** A task's query: one turn of a conversation closed right away under a multiround PD, else a plain query. */
  async #sendOnce(base: string, document: ProtocolDocument | undefined, body: JsonValue, signal?: AbortSignal): Promise<QueryResult> {
    if (!document?.metadata.multiround) return this.query(base, { body, ...(document ? { protocol: document } : {}), ...(signal ? { signal } : {}) });
    // One turn is all a task needs here; the conversation is closed right away, as the Python SDK does.
    const conversation = this.#open(base, (turnSignal) => this.#protocolFields(base, document, turnSignal));
    try {
      return await conversation.send(body, signal ? { signal } : {});
    } finally {
      await conversation.close().catch((error: unknown) => this.logger.warn(`closing a conversation with ${base}: ${describeError(error)}`));
    }
  }

  async #localDocuments(): Promise<ProtocolDocument[]> {
    if (!this.dir) return [];
    const folder = join(this.dir, 'protocols');
    let names: string[];
    try {
      names = (await readdir(folder)).filter((name) => name.endsWith('.md')).sort();
    } catch {
      return [];
    }
    const documents: ProtocolDocument[] = [];
    for (const name of names) {
      try {
        const document = parseDocument(await readFile(join(folder, name)), name);
        this.#documents.set(document.hash, document);
        documents.push(document);
      } catch (error) {
        this.logger.warn(`protocols/${name} skipped: ${describeError(error)}`);
      }
    }
    return documents;
  }

  /** A PD by hex hash: held already, in `protocols/`, remembered, or served by the target. */
  async #knownDocument(hash: string, base: string, signal?: AbortSignal): Promise<ProtocolDocument | undefined> {
    const held = this.#documents.get(hash);
    if (held) return held;
    const remembered = await this.memory.get<{ text?: JsonValue }>(`sender/documents/${hash}`);
    if (remembered && typeof remembered.text === 'string' && hashText(remembered.text) === hash) {
      try {
        const document = parseDocument(remembered.text, `sender/documents/${hash}`);
        this.#documents.set(hash, document);
        return document;
      } catch {
        // Fall through.
      }
    }
    const local = (await this.#localDocuments()).find((document) => document.hash === hash);
    return local ?? this.#peerDocument(base, hash, [], signal);
  }

  async #remember(document: ProtocolDocument): Promise<void> {
    this.#documents.set(document.hash, document);
    await this.memory.set(`sender/documents/${document.hash}`, { text: document.text, name: document.metadata.name });
  }

  /**
   * Fetches a peer's PD and checks its hash: `data:` sources, then the peer's own URLs (its `/protocols/:hash` first);
   * sources on other hosts go through the guarded fetch of spec §3, so a peer cannot point us into our own network.
   */
  async #peerDocument(base: string, hash: string, sources: readonly string[], signal?: AbortSignal): Promise<ProtocolDocument | undefined> {
    const held = this.#documents.get(hash);
    if (held) return held;
    const origin = new URL(base).origin;
    const own = [`${base}/protocols/${hash}`];
    const foreign: string[] = [];
    const inline: Buffer[] = [];
    for (const source of sources) {
      if (/^data:/i.test(source)) {
        const bytes = decodeDataUri(source);
        if (bytes) inline.push(bytes);
        continue;
      }
      let url: URL;
      try {
        url = source.startsWith('/') ? new URL(`${base}${source}`) : new URL(source);
      } catch {
        continue;
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') continue;
      if (url.origin === origin) {
        if (!own.includes(url.href)) own.push(url.href);
      } else foreign.push(url.href);
    }
    const attempts: (() => Promise<Uint8Array | undefined>)[] = [
      ...inline.map((bytes) => async () => bytes),
      ...own.map((url) => () => this.#download(url, signal)),
      ...foreign.map((url) => () => fetchSource(url, { maxBytes: MAX_DOCUMENT_BYTES })),
    ];
    for (const attempt of attempts) {
      let bytes: Uint8Array | undefined;
      try {
        bytes = await attempt();
      } catch (error) {
        this.logger.warn(`protocol ${hash} from ${base}: ${describeError(error)}`);
        continue;
      }
      if (!bytes || hashText(bytes) !== hash) continue;
      try {
        const document = parseDocument(bytes, `${base} protocol ${hash}`);
        await this.#remember(document);
        return document;
      } catch (error) {
        this.logger.warn(describeError(error));
        return undefined;
      }
    }
    return undefined;
  }

  async #download(url: string, signal?: AbortSignal): Promise<Uint8Array | undefined> {
    const response = await this.#exchange('GET', url, undefined, signal, MAX_DOCUMENT_BYTES);
    return response.status >= 200 && response.status < 300 ? response.bytes : undefined;
  }

  // --- wire ----------------------------------------------------------------------------------------------------

  /** `protocolHash` and `protocolSources` for a PD, the hash in the encoding the peer reads. */
  async #protocolFields(base: string, protocol: ProtocolDocument | string | undefined, signal?: AbortSignal): Promise<ProtocolFields> {
    if (protocol === undefined) return NATURAL_LANGUAGE;
    const document = typeof protocol === 'string' ? parseDocument(protocol) : protocol;
    const encoding = await this.#encodingFor(base, signal);
    const sources = [encodeDataUri(document.text)];
    if (this.#publicUrl) sources.push(`${this.#publicUrl}/protocols/${document.hash}`);
    return { protocolHash: encodeHash(document.hash, encoding), protocolSources: sources };
  }

  /** The hash encoding a peer reads: hex when its `/wellknown` is (or lists hex), base64 for a Python peer (404). */
  async #encodingFor(base: string, signal?: AbortSignal): Promise<HashEncoding> {
    let pending = this.#encodings.get(base);
    if (!pending) {
      pending = this.#readWellknown(base, signal).then(
        (listing) => encodingOf(listing),
        (error: unknown) => {
          // Unknown for now: hex is the standard's default, and the next query asks again.
          this.#encodings.delete(base);
          this.logger.warn(`discovery of ${base}: ${describeError(error)}; sending hex hashes`);
          return 'hex' as const;
        },
      );
      this.#encodings.set(base, pending);
    }
    return pending;
  }

  /** `GET /wellknown`: the listing, or undefined when the peer has none (404). */
  async #readWellknown(base: string, signal?: AbortSignal): Promise<Wellknown | undefined> {
    const url = `${base}/wellknown`;
    const response = await this.#exchange('GET', url, undefined, signal);
    if (response.status === 404) {
      this.#encodings.set(base, Promise.resolve(encodingOf(undefined)));
      return undefined;
    }
    const json = this.#parseJson('GET', url, response);
    if (response.status < 200 || response.status > 299) throw this.#peerError('GET', url, response.status, json);
    const parsed = wellknownSchema.safeParse(json);
    if (!parsed.success) throw new AgoraError('PEER_FAILURE', `GET ${url}: not a /wellknown listing: ${z.prettifyError(parsed.error)}`, { status: response.status });
    // Every read of the listing settles discovery too, so a task's look at it spares the query another GET.
    if (!this.#encodings.has(base)) this.#encodings.set(base, Promise.resolve(encodingOf(parsed.data)));
    return parsed.data;
  }

  async #post(url: string, payload: Record<string, unknown>, signal?: AbortSignal): Promise<QueryResult> {
    const response = await this.#exchange('POST', url, payload, signal);
    const json = this.#parseJson('POST', url, response);
    const parsed = peerResponseSchema.safeParse(json);
    if (!parsed.success) throw this.#peerError('POST', url, response.status, json);
    const reply = parsed.data;
    if (reply.status === 'failure') throw new AgoraError('PEER_FAILURE', reply.error, { status: response.status });
    if (reply.status === 'error') throw new AgoraError('PEER_FAILURE', reply.message, { status: response.status });
    return {
      body: (reply.body ?? null) as JsonValue,
      ...(reply.conversationId ? { conversationId: reply.conversationId } : {}),
      ...(reply.conversationExpires !== undefined && Number.isFinite(reply.conversationExpires) ? { conversationExpires: reply.conversationExpires } : {}),
    };
  }

  #parseJson(method: string, url: string, response: { status: number; bytes: Uint8Array }): unknown {
    const text = Buffer.from(response.bytes).toString('utf8');
    try {
      return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
    } catch {
      const excerpt = text.replace(/\s+/g, ' ').trim().slice(0, 80);
      throw new AgoraError('PEER_FAILURE', `${method} ${url}: HTTP ${response.status}, not JSON${excerpt ? `: ${excerpt}` : ''}`, { status: response.status });
    }
  }

  /** An error reply in either failure shape keeps the peer's text; anything else names the URL and status. */
  #peerError(method: string, url: string, status: number, json: unknown): AgoraError {
    const failure = peerResponseSchema.safeParse(json);
    if (failure.success && failure.data.status === 'failure') return new AgoraError('PEER_FAILURE', failure.data.error, { status });
    if (failure.success && failure.data.status === 'error') return new AgoraError('PEER_FAILURE', failure.data.message, { status });
    return new AgoraError('PEER_FAILURE', `${method} ${url}: HTTP ${status}, not an Agora reply`, { status });
  }

  /** One HTTP exchange, bounded by the timeout (body included) and a size cap; never retried. */
  async #exchange(method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown, signal?: AbortSignal, maxBytes = MAX_REPLY_BYTES): Promise<{ status: number; bytes: Uint8Array }> {
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const fail = (error: unknown): never => {
      if (timeout.aborted && !signal?.aborted) throw new AgoraError('TIMEOUT', `${method} ${url}: timed out after ${this.#timeoutMs} ms`, { cause: error });
      if (signal?.aborted) throw signal.reason;
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const reason = cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
      throw new AgoraError('PEER_FAILURE', `${method} ${url}: ${reason}`, { cause: error });
    };
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method,
        headers: payload === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
        ...(payload === undefined ? {} : { body: JSON.stringify(payload) }),
        signal: combined,
        redirect: method === 'GET' ? 'follow' : 'manual',
      });
    } catch (error) {
      return fail(error);
    }
    try {
      return { status: response.status, bytes: await readCapped(response, maxBytes, `${method} ${url}`) };
    } catch (error) {
      if (isAgoraError(error)) throw error;
      return fail(error);
    }
  }

  /** Closes the memory (a no-op for files). */
  async close(): Promise<void> {
    await this.memory.close();
  }
}

async function readCapped(response: Response, maxBytes: number, what: string): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw new AgoraError('PEER_FAILURE', `${what}: reply larger than ${maxBytes} bytes`, { status: response.status });
  }
  if (!response.body) return new Uint8Array();
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new AgoraError('PEER_FAILURE', `${what}: reply larger than ${maxBytes} bytes`, { status: response.status });
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, size);
}
