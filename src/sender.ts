import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { AgoraError, describeError, isAgoraError } from './errors.js';
import { extractJson, prescribesJson } from './llm/responders.js';
import { converse, type LanguageModel, type LlmMessage, type UsageSink } from './llm/toolformer.js';
import { consoleLogger, type Logger } from './log.js';
import { FileMemory, InMemoryMemory, type AgentMemory } from './memory.js';
import { negotiateProtocol, writeProtocolFile, type NegotiationMessage, type NegotiationTask } from './negotiation.js';
import { encodeHash, hashEncodingOf, hashText, normalizeHash, parseDocument, type HashEncoding, type ProtocolDocument } from './protocol/document.js';
import { decodeDataUri, encodeDataUri, fetchSource } from './protocol/sources.js';
import { peerResponseSchema, wellknownSchema, type JsonValue, type Wellknown } from './schemas.js';

/** The default bound on one HTTP exchange with a peer: 30 s. */
export const DEFAULT_SENDER_TIMEOUT_MS = 30_000;

// A reply larger than this is not an Agora reply; a PD larger than the receivers' source cap is no PD.
const MAX_REPLY_BYTES = 16 * 1024 * 1024;
const MAX_DOCUMENT_BYTES = 256 * 1024;

/** When a typed task looks for a protocol and when it negotiates one (uses per task and target, 1-based). */
export type SenderThresholds = {
  /** From this use on, look for a fitting PD (default 6, as the Python SDK). */
  lookForProtocolFrom?: number;
  /** From this use on, with no fitting PD, negotiate one (default 11). */
  negotiateFrom?: number;
};

/** A typed task: what it is for, and zod schemas of its input and output. */
export type TaskSpec<Input = unknown, Output = unknown> = {
  name: string;
  description: string;
  input: z.ZodType<Input>;
  output: z.ZodType<Output>;
};

/** A sender routine for a PD: builds the query body from the task's input and reads the reply into its output. */
export type TaskRoutine = {
  buildBody(input: unknown): unknown;
  parseReply(body: unknown): unknown;
};

/** What a task reports after each successful call. */
export type TaskServedEvent = {
  task: string;
  /** The target's base URL. */
  target: string;
  /** Hex hash of the PD used, or null for natural language. */
  hash: string | null;
  input: unknown;
  body: unknown;
  reply: unknown;
  output: unknown;
  /** LLM calls this task call made (0 once routines do the work). */
  llmCalls: number;
};

/** Extensions plug into the sender here (LLM-written sender routines, usage statistics). */
export type SenderExtensions = {
  /** A routine for a task under a PD; when it throws, the LLM does that step instead. */
  taskRoutine?(task: TaskSpec, document: ProtocolDocument): Promise<TaskRoutine | undefined>;
  /** Called after every successful task call (not awaited; errors are logged). */
  served?(event: TaskServedEvent): void | Promise<void>;
};

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

/** A typed task bound to a sender: call it with an input and a target agent's URL. */
export type TaskFunction<Input, Output> = (input: Input, options: { target: string; signal?: AbortSignal }) => Promise<Output>;

/** The outcome of {@link Sender.negotiate}: the agreed PD and where it was written. */
export type SenderNegotiation = { document: ProtocolDocument; rounds: number; transcript: NegotiationMessage[]; path?: string };

/** What a task remembers per target (memory key `tasks/<task>/<target>`). */
export type TaskState = {
  uses: number;
  /** Hex hash of the PD the task uses with this target, or null (natural language). */
  protocolHash: string | null;
  /** Fit verdicts of the LLM, per hex hash. */
  verdicts: Record<string, boolean>;
  negotiation?: { outcome: 'agreed'; hash: string; rounds: number; at: string; path?: string } | { outcome: 'failed'; error: string; at: string };
};

type ProtocolFields = { protocolHash: string | null; protocolSources: string[] };
/** JSON Schemas of a task's input and output, as the LLM is shown them. */
type TaskSchemas = { input?: Record<string, unknown>; output?: Record<string, unknown> };
type Meter = { calls: number };

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

function slug(text: string): string {
  const value = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9._]+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(0, 100);
  return value || 'default';
}

function textOf(body: JsonValue): string {
  return typeof body === 'string' ? body : JSON.stringify(body);
}

function lastLineVerdict(text: string): boolean {
  const last = text.trim().split('\n').filter((line) => line.trim()).pop() ?? '';
  return /^\W*yes\W*$/i.test(last.trim()) || (/\byes\b/i.test(last) && !/\bno\b/i.test(last));
}

function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> | undefined {
  try {
    return z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function toJsonValue(value: unknown, what: string): JsonValue {
  if (value === undefined) throw new AgoraError('BAD_REQUEST', `${what} is required`);
  try {
    return JSON.parse(JSON.stringify(value)) as JsonValue;
  } catch (error) {
    throw new AgoraError('BAD_REQUEST', `${what} is not JSON: ${describeError(error)}`);
  }
}

/** Hex for a peer with a listing (the standard's default), base64 for one listing only base64 keys or none at all (404). */
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
  readonly #lookFrom: number;
  readonly #negotiateFrom: number;
  readonly #publicUrl: string | undefined;
  readonly #encodings = new Map<string, Promise<HashEncoding>>();
  readonly #documents = new Map<string, ProtocolDocument>();
  readonly #locks = new Map<string, Promise<unknown>>();
  readonly #negotiations = new Map<string, Promise<ProtocolDocument | undefined>>();
  readonly #usage: SenderUsage = { llmCalls: 0, inputTokens: 0, outputTokens: 0 };

  constructor(options: SenderOptions = {}) {
    this.#options = options;
    this.llm = options.llm;
    this.dir = options.dir === undefined ? undefined : resolve(options.dir);
    this.memory = options.memory ?? (this.dir ? new FileMemory(join(this.dir, '.agora')) : new InMemoryMemory());
    this.logger = options.logger ?? consoleLogger();
    this.extensions = options.extensions ?? {};
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_SENDER_TIMEOUT_MS;
    this.#lookFrom = options.thresholds?.lookForProtocolFrom ?? 6;
    this.#negotiateFrom = options.thresholds?.negotiateFrom ?? 11;
    this.#publicUrl = options.publicUrl?.replace(/\/+$/, '');
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
    options: { maxRounds?: number; onRound?: (round: number, proposal: string, answer: string) => void; signal?: AbortSignal; meter?: Meter },
  ): Promise<SenderNegotiation> {
    if (!this.llm) throw new AgoraError('LLM_UNAVAILABLE', 'Negotiating a protocol needs an LLM');
    const conversation = this.#open(base, async () => NEGOTIATION);
    let result;
    try {
      const maxRounds = options.maxRounds ?? this.#options.maxNegotiationRounds;
      result = await negotiateProtocol({
        llm: this.llm,
        task,
        send: async (message) => textOf((await conversation.send(message, options.signal ? { signal: options.signal } : {})).body),
        onUsage: this.#sink(options.meter),
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
    const general = spec as unknown as TaskSpec;
    const schemas = { input: jsonSchemaOf(spec.input, 'output'), output: jsonSchemaOf(spec.output, 'input') };
    return async (input, options) => (await this.#runTask(general, schemas, input, options.target, options.signal)) as Output;
  }

  /** What a task remembers about a target. */
  async taskState(taskName: string, target: string): Promise<TaskState> {
    return this.#readState(this.#taskKey(taskName, agentBaseUrl(target)));
  }

  #taskKey(taskName: string, base: string): string {
    return `tasks/${slug(taskName)}/${slug(base.replace(/^https?:\/\//, (scheme) => (scheme === 'https://' ? 'https-' : '')))}`;
  }

  async #readState(key: string): Promise<TaskState> {
    const saved = await this.memory.get<Record<string, JsonValue>>(key);
    const state: TaskState = { uses: 0, protocolHash: null, verdicts: {} };
    if (!saved || typeof saved !== 'object') return state;
    if (typeof saved.uses === 'number' && Number.isInteger(saved.uses) && saved.uses >= 0) state.uses = saved.uses;
    if (typeof saved.protocolHash === 'string' && normalizeHash(saved.protocolHash)) state.protocolHash = normalizeHash(saved.protocolHash)!;
    if (saved.verdicts && typeof saved.verdicts === 'object' && !Array.isArray(saved.verdicts)) {
      for (const [hash, verdict] of Object.entries(saved.verdicts)) if (typeof verdict === 'boolean') state.verdicts[hash] = verdict;
    }
    if (saved.negotiation && typeof saved.negotiation === 'object') state.negotiation = saved.negotiation as TaskState['negotiation'];
    return state;
  }

  /** Read-modify-write of a task's state, one at a time per key within this process. */
  async #updateState(key: string, change: (state: TaskState) => void): Promise<TaskState> {
    const previous = this.#locks.get(key) ?? Promise.resolve();
    const run = previous.then(async () => {
      const state = await this.#readState(key);
      change(state);
      await this.memory.set(key, state as unknown as JsonValue);
      return state;
    });
    const tail = run.catch(() => undefined);
    this.#locks.set(key, tail);
    void tail.then(() => {
      if (this.#locks.get(key) === tail) this.#locks.delete(key);
    });
    return run;
  }

  async #runTask(task: TaskSpec, schemas: TaskSchemas, rawInput: unknown, target: string, signal?: AbortSignal): Promise<unknown> {
    const checked = task.input.safeParse(rawInput);
    if (!checked.success) throw new AgoraError('BAD_REQUEST', `task "${task.name}": invalid input: ${z.prettifyError(checked.error)}`);
    const input = checked.data;
    const base = agentBaseUrl(target);
    const key = this.#taskKey(task.name, base);
    const meter: Meter = { calls: 0 };
    const state = await this.#updateState(key, (current) => void (current.uses += 1));
    const document = await this.#chooseDocument(task, schemas, base, key, state, meter, signal);
    const routine = document ? await this.#taskRoutine(task, document) : undefined;

    let body: JsonValue | undefined;
    if (routine) {
      try {
        body = toJsonValue(await routine.buildBody(input), 'the routine\'s body');
      } catch (error) {
        this.logger.warn(`task "${task.name}": sender routine failed to build the body, the LLM writes it: ${describeError(error)}`);
      }
    }
    body ??= await this.#writeBody(task, schemas, document, input, meter, signal);

    let reply: QueryResult;
    try {
      if (document?.metadata.multiround) {
        // One turn is all a task needs here; the conversation is closed right away, as the Python SDK does.
        const conversation = this.#open(base, (turnSignal) => this.#protocolFields(base, document, turnSignal));
        try {
          reply = await conversation.send(body, signal ? { signal } : {});
        } finally {
          await conversation.close().catch((error: unknown) => this.logger.warn(`closing a conversation with ${base}: ${describeError(error)}`));
        }
      } else {
        reply = await this.query(base, { body, ...(document ? { protocol: document } : {}), ...(signal ? { signal } : {}) });
      }
    } catch (error) {
      // The peer refusing the PD says it does not fit this target after all: the next call looks again.
      if (document && isAgoraError(error) && error.code === 'PEER_FAILURE' && /unsupported protocol|not suitable|failed to download protocol/i.test(error.message)) {
        await this.#updateState(key, (current) => {
          current.verdicts[document.hash] = false;
          if (current.protocolHash === document.hash) current.protocolHash = null;
        });
        this.logger.warn(`task "${task.name}": ${base} refused protocol "${document.metadata.name}" ${document.hash}: ${error.message}`);
      }
      throw error;
    }

    let output: unknown;
    let parsedByRoutine = false;
    if (routine) {
      try {
        const parsed = task.output.safeParse(await routine.parseReply(reply.body));
        if (!parsed.success) throw new Error(`output does not match the task's schema: ${z.prettifyError(parsed.error)}`);
        output = parsed.data;
        parsedByRoutine = true;
      } catch (error) {
        this.logger.warn(`task "${task.name}": sender routine failed to read the reply, the LLM reads it: ${describeError(error)}`);
      }
    }
    if (!parsedByRoutine) output = await this.#readReply(task, schemas, document, input, reply.body, meter, signal);

    if (this.extensions.served) {
      const event: TaskServedEvent = { task: task.name, target: base, hash: document?.hash ?? null, input, body, reply: reply.body, output, llmCalls: meter.calls };
      Promise.resolve()
        .then(() => this.extensions.served?.(event))
        .catch((error: unknown) => this.logger.error(`served hook failed: ${describeError(error)}`));
    }
    return output;
  }

  async #taskRoutine(task: TaskSpec, document: ProtocolDocument): Promise<TaskRoutine | undefined> {
    if (!this.extensions.taskRoutine) return undefined;
    try {
      return await this.extensions.taskRoutine(task, document);
    } catch (error) {
      this.logger.warn(`task "${task.name}": no sender routine for "${document.metadata.name}": ${describeError(error)}`);
      return undefined;
    }
  }

  /** The PD a task call uses with a target: the one chosen before, a fitting one, a negotiated one, or none. */
  async #chooseDocument(
    task: TaskSpec,
    schemas: TaskSchemas,
    base: string,
    key: string,
    state: TaskState,
    meter: Meter,
    signal?: AbortSignal,
  ): Promise<ProtocolDocument | undefined> {
    if (state.protocolHash) {
      const chosen = await this.#knownDocument(state.protocolHash, base, signal);
      if (chosen) return chosen;
      this.logger.warn(`task "${task.name}": protocol ${state.protocolHash} is no longer available, looking again`);
      await this.#updateState(key, (current) => void (current.protocolHash = null));
    }
    if (!this.llm || state.uses < this.#lookFrom) return undefined;
    for (const candidate of await this.#candidates(base, state, signal)) {
      let fits = state.verdicts[candidate.hash];
      if (fits === undefined) {
        fits = await this.#judgeFit(task, schemas, candidate, meter, signal);
        const verdict = fits;
        await this.#updateState(key, (current) => void (current.verdicts[candidate.hash] = verdict));
        this.logger.info(`task "${task.name}": protocol "${candidate.metadata.name}" ${candidate.hash} judged ${fits ? 'a fit' : 'no fit'}`);
      }
      if (fits) {
        await this.#updateState(key, (current) => void (current.protocolHash = candidate.hash));
        return candidate;
      }
    }
    if (state.uses < this.#negotiateFrom || state.negotiation) return undefined;
    // Concurrent calls at the threshold share one negotiation.
    let pending = this.#negotiations.get(key);
    if (!pending) {
      pending = this.#negotiateForTask(task, schemas, base, key, meter, signal).finally(() => this.#negotiations.delete(key));
      this.#negotiations.set(key, pending);
    }
    return pending;
  }

  async #negotiateForTask(
    task: TaskSpec,
    schemas: TaskSchemas,
    base: string,
    key: string,
    meter: Meter,
    signal?: AbortSignal,
  ): Promise<ProtocolDocument | undefined> {
    try {
      const result = await this.#negotiate(
        base,
        { name: task.name, description: task.description, ...(schemas.input ? { inputSchema: schemas.input } : {}), ...(schemas.output ? { outputSchema: schemas.output } : {}) },
        { meter, ...(signal ? { signal } : {}) },
      );
      const hash = result.document.hash;
      await this.#updateState(key, (current) => {
        current.protocolHash = hash;
        current.verdicts[hash] = true;
        current.negotiation = { outcome: 'agreed', hash, rounds: result.rounds, at: new Date().toISOString(), ...(result.path ? { path: result.path } : {}) };
      });
      return result.document;
    } catch (error) {
      // A failed negotiation is not a failed task: natural language still works, and it is not tried again.
      this.logger.warn(`task "${task.name}": negotiation with ${base} failed: ${describeError(error)}`);
      await this.#updateState(key, (current) => void (current.negotiation = { outcome: 'failed', error: error instanceof Error ? error.message : String(error), at: new Date().toISOString() }));
      return undefined;
    }
  }

  /** Candidate PDs for a target: those its `/wellknown` lists (and serves), then those in `<dir>/protocols/`. */
  async #candidates(base: string, state: TaskState, signal?: AbortSignal): Promise<ProtocolDocument[]> {
    const found = new Map<string, ProtocolDocument>();
    try {
      const listing = (await this.#readWellknown(base, signal)) ?? {};
      for (const [key, sources] of Object.entries(listing)) {
        const hash = normalizeHash(key);
        // A PD judged unfit is not fetched again.
        if (!hash || state.verdicts[hash] === false || found.has(hash)) continue;
        const document = await this.#peerDocument(base, hash, sources, signal);
        if (document) found.set(hash, document);
      }
    } catch (error) {
      this.logger.warn(`looking for protocols at ${base}: ${describeError(error)}`);
    }
    for (const document of await this.#localDocuments()) if (!found.has(document.hash) && state.verdicts[document.hash] !== false) found.set(document.hash, document);
    return [...found.values()];
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

  // --- LLM steps -----------------------------------------------------------------------------------------------

  #sink(meter?: Meter): UsageSink {
    return (usage) => {
      this.#usage.llmCalls += 1;
      this.#usage.inputTokens += usage.inputTokens;
      this.#usage.outputTokens += usage.outputTokens;
      if (meter) meter.calls += 1;
      try {
        this.#options.onUsage?.(usage);
      } catch (error) {
        this.logger.error(`onUsage failed: ${describeError(error)}`);
      }
    };
  }

  #requireLlm(task: TaskSpec): LanguageModel {
    if (!this.llm) throw new AgoraError('LLM_UNAVAILABLE', `task "${task.name}" needs an LLM (or a sender routine under a protocol)`);
    return this.llm;
  }

  #describeTask(task: TaskSpec, schemas: TaskSchemas, input: unknown): string {
    const lines = [`Task: ${task.name}. ${task.description}`.trim(), `Input (JSON): ${JSON.stringify(input)}`];
    if (schemas.output) lines.push(`What the task needs back (JSON Schema): ${JSON.stringify(schemas.output)}`);
    return lines.join('\n');
  }

  async #judgeFit(task: TaskSpec, schemas: TaskSchemas, document: ProtocolDocument, meter: Meter, signal?: AbortSignal): Promise<boolean> {
    const system = [
      'You are an agent on the Agora network. You decide whether a protocol document lets you do a task by querying another',
      'agent under it: a query written from the task\'s input must be valid under the protocol, and the reply must hold',
      'everything the task needs back. Answer with one line of reasoning, then a last line that is exactly YES or NO.',
    ].join('\n');
    const lines = [`Task: ${task.name}. ${task.description}`.trim()];
    if (schemas.input) lines.push(`The task's input (JSON Schema): ${JSON.stringify(schemas.input)}`);
    if (schemas.output) lines.push(`What the task needs back (JSON Schema): ${JSON.stringify(schemas.output)}`);
    lines.push('', '<protocol>', document.text.trim(), '</protocol>');
    const result = await converse(this.#requireLlm(task), {
      system,
      messages: [{ role: 'user', content: lines.join('\n') }],
      maxSteps: 1,
      temperature: 0,
      onUsage: this.#sink(meter),
      ...(signal ? { signal } : {}),
    });
    return lastLineVerdict(result.text);
  }

  async #writeBody(
    task: TaskSpec,
    schemas: TaskSchemas,
    document: ProtocolDocument | undefined,
    input: unknown,
    meter: Meter,
    signal?: AbortSignal,
  ): Promise<JsonValue> {
    const llm = this.#requireLlm(task);
    if (!document) {
      const system = [
        'You are an agent on the Agora network. You do a task by sending one message in natural language to another agent.',
        'Write that message from the task and its input: self-contained, asking for exactly what the task needs back.',
        'Reply with the message only: no preamble.',
      ].join('\n');
      const result = await converse(llm, { system, messages: [{ role: 'user', content: this.#describeTask(task, schemas, input) }], maxSteps: 1, onUsage: this.#sink(meter), ...(signal ? { signal } : {}) });
      const text = result.text.trim();
      if (!text) throw new AgoraError('INVALID_OUTPUT', `task "${task.name}": the LLM wrote an empty query`);
      return text;
    }
    const json = prescribesJson(document);
    const system = [
      'You are an agent on the Agora network. You do a task by querying another agent under this protocol document, which',
      'is the contract both sides follow:',
      '<protocol>',
      document.text.trim(),
      '</protocol>',
      '',
      'Write the body of the query exactly as the protocol prescribes for the sender, from the task\'s input.',
      json ? 'Reply with only the JSON value of the body: no prose, no code fences.' : 'Reply with the body only: no preamble.',
    ].join('\n');
    const prompt = this.#describeTask(task, schemas, input);
    if (!json) {
      const result = await converse(llm, { system, messages: [{ role: 'user', content: prompt }], maxSteps: 1, onUsage: this.#sink(meter), ...(signal ? { signal } : {}) });
      return result.text.trim();
    }
    return this.#askJson(llm, system, prompt, meter, signal, (value) => ({ ok: true, value }), (error) => `task "${task.name}": the LLM's query body under "${document.metadata.name}" is not JSON: ${error}`);
  }

  async #readReply(
    task: TaskSpec,
    schemas: TaskSchemas,
    document: ProtocolDocument | undefined,
    input: unknown,
    reply: JsonValue,
    meter: Meter,
    signal?: AbortSignal,
  ): Promise<unknown> {
    const llm = this.#requireLlm(task);
    const system = [
      'You are an agent on the Agora network. You queried another agent for a task; turn its reply into the JSON value the',
      'task needs back.',
      schemas.output ? `That value must match this JSON Schema: ${JSON.stringify(schemas.output)}` : '',
      'Reply with only the JSON value: no prose, no code fences. Take the facts from the reply only.',
    ]
      .filter(Boolean)
      .join('\n');
    const lines = [this.#describeTask(task, {}, input)];
    if (document) lines.push('', 'The query was made under this protocol:', '<protocol>', document.text.trim(), '</protocol>');
    lines.push('', 'The other agent replied:', textOf(reply));
    return this.#askJson(
      llm,
      system,
      lines.join('\n'),
      meter,
      signal,
      (value) => {
        const parsed = task.output.safeParse(value);
        return parsed.success ? { ok: true, value: parsed.data } : { ok: false, error: `it does not match the schema: ${z.prettifyError(parsed.error)}` };
      },
      (error) => `task "${task.name}": the reply could not be turned into the task's output: ${error}`,
    );
  }

  /** Asks for a JSON value, checks it, and asks once more with the error before giving up with INVALID_OUTPUT. */
  async #askJson<T>(
    llm: LanguageModel,
    system: string,
    prompt: string,
    meter: Meter,
    signal: AbortSignal | undefined,
    check: (value: JsonValue) => { ok: true; value: T } | { ok: false; error: string },
    failure: (error: string) => string,
  ): Promise<T> {
    const options = { system, maxSteps: 1, temperature: 0, onUsage: this.#sink(meter), ...(signal ? { signal } : {}) };
    const attempt = (text: string): { ok: true; value: T } | { ok: false; error: string } => {
      const json = extractJson(text);
      if (!json.ok) return { ok: false, error: `not JSON (${json.error})` };
      return check(json.value);
    };
    const first = await converse(llm, { ...options, messages: [{ role: 'user', content: prompt }] });
    const checked = attempt(first.text);
    if (checked.ok) return checked.value;
    const messages: LlmMessage[] = [...first.messages, { role: 'user', content: `Your reply is not usable: ${checked.error}. Reply again with only the JSON value.` }];
    const second = await converse(llm, { ...options, messages });
    const repaired = attempt(second.text);
    if (repaired.ok) return repaired.value;
    throw new AgoraError('INVALID_OUTPUT', failure(repaired.error));
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
