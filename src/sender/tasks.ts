import { z } from 'zod';
import { AgoraError, describeError, isAgoraError } from '../errors.js';
import { extractJson, prescribesJson } from '../llm/responders.js';
import { converse, type LanguageModel, type LlmMessage, type UsageSink } from '../llm/toolformer.js';
import type { Logger } from '../log.js';
import type { AgentMemory } from '../memory/file.js';
import type { NegotiationTask } from '../negotiation.js';
import { normalizeHash, type ProtocolDocument } from '../protocol/document.js';
import { jsonText, toJsonValue, type JsonValue, type Wellknown } from '../schemas.js';

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


/** A typed task bound to a sender: call it with an input and a target agent's URL. */
export type TaskFunction<Input, Output> = (input: Input, options: { target: string; signal?: AbortSignal }) => Promise<Output>;

/** What a task remembers per target (memory key `tasks/<task>/<target>`). */
export type TaskState = {
  uses: number;
  /** Hex hash of the PD the task uses with this target, or null (natural language). */
  protocolHash: string | null;
  /** Fit verdicts of the LLM, per hex hash. */
  verdicts: Record<string, boolean>;
  negotiation?: { outcome: 'agreed'; hash: string; rounds: number; at: string; path?: string } | { outcome: 'failed'; error: string; at: string };
};


/** What typed tasks need of the client that runs them: its wire, its store of PDs and its usage count. */
export type TaskClient = {
  readonly llm: LanguageModel | undefined;
  readonly memory: AgentMemory;
  readonly logger: Logger;
  readonly extensions: SenderExtensions;
  /** The agent's base URL, or BAD_REQUEST. */
  baseUrl(url: string): string;
  /** One query under a PD (one turn of a conversation when the PD is multiround), or in natural language. */
  send(base: string, document: ProtocolDocument | undefined, body: JsonValue, signal?: AbortSignal): Promise<{ body: JsonValue }>;
  negotiate(base: string, task: NegotiationTask, onUsage: UsageSink, signal?: AbortSignal): Promise<{ document: ProtocolDocument; rounds: number; path?: string }>;
  /** The peer's `/wellknown` listing, or undefined when it has none. */
  listing(base: string, signal?: AbortSignal): Promise<Wellknown | undefined>;
  peerDocument(base: string, hash: string, sources: readonly string[], signal?: AbortSignal): Promise<ProtocolDocument | undefined>;
  knownDocument(hash: string, base: string, signal?: AbortSignal): Promise<ProtocolDocument | undefined>;
  localDocuments(): Promise<ProtocolDocument[]>;
  /** Counts an LLM call in the client's usage. */
  onUsage: UsageSink;
};

/** JSON Schemas of a task's input and output, as the LLM is shown them. */
type TaskSchemas = { input?: Record<string, unknown>; output?: Record<string, unknown> };
type Meter = { calls: number };

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

/**
 * Typed tasks on a client: natural language first, then a fitting or negotiated PD as they are used, with their
 * counters and fit verdicts kept per (task, target) in the client's memory.
 */
export class TaskRunner {
  readonly #client: TaskClient;
  readonly #lookFrom: number;
  readonly #negotiateFrom: number;
  readonly #locks = new Map<string, Promise<unknown>>();
  readonly #negotiations = new Map<string, Promise<ProtocolDocument | undefined>>();

  constructor(client: TaskClient, thresholds: SenderThresholds = {}) {
    this.#client = client;
    this.#lookFrom = thresholds.lookForProtocolFrom ?? 6;
    this.#negotiateFrom = thresholds.negotiateFrom ?? 11;
  }

  /** A typed task bound to the client: each call runs the lifecycle for its target. */
  task<Input, Output>(spec: TaskSpec<Input, Output>): TaskFunction<Input, Output> {
    const general = spec as unknown as TaskSpec;
    const schemas = { input: jsonSchemaOf(spec.input, 'output'), output: jsonSchemaOf(spec.output, 'input') };
    return async (input, options) => (await this.#runTask(general, schemas, input, options.target, options.signal)) as Output;
  }

  /** What a task remembers about a target. */
  async state(taskName: string, target: string): Promise<TaskState> {
    return this.#readState(this.#taskKey(taskName, this.#client.baseUrl(target)));
  }

  #taskKey(taskName: string, base: string): string {
    return `tasks/${slug(taskName)}/${slug(base.replace(/^https?:\/\//, (scheme) => (scheme === 'https://' ? 'https-' : '')))}`;
  }

  async #readState(key: string): Promise<TaskState> {
    const saved = await this.#client.memory.get<Record<string, JsonValue>>(key);
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
      await this.#client.memory.set(key, state as unknown as JsonValue);
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
    const base = this.#client.baseUrl(target);
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
        this.#client.logger.warn(`task "${task.name}": sender routine failed to build the body, the LLM writes it: ${describeError(error)}`);
      }
    }
    body ??= await this.#writeBody(task, schemas, document, input, meter, signal);

    let reply: { body: JsonValue };
    try {
      reply = await this.#client.send(base, document, body, signal);
    } catch (error) {
      // The peer refusing the PD says it does not fit this target after all: the next call looks again.
      if (document && isAgoraError(error) && error.code === 'PEER_FAILURE' && /unsupported protocol|not suitable|failed to download protocol/i.test(error.message)) {
        await this.#updateState(key, (current) => {
          current.verdicts[document.hash] = false;
          if (current.protocolHash === document.hash) current.protocolHash = null;
        });
        this.#client.logger.warn(`task "${task.name}": ${base} refused protocol "${document.metadata.name}" ${document.hash}: ${error.message}`);
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
        this.#client.logger.warn(`task "${task.name}": sender routine failed to read the reply, the LLM reads it: ${describeError(error)}`);
      }
    }
    if (!parsedByRoutine) output = await this.#readReply(task, schemas, document, input, reply.body, meter, signal);

    if (this.#client.extensions.served) {
      const event: TaskServedEvent = { task: task.name, target: base, hash: document?.hash ?? null, input, body, reply: reply.body, output, llmCalls: meter.calls };
      Promise.resolve()
        .then(() => this.#client.extensions.served?.(event))
        .catch((error: unknown) => this.#client.logger.error(`served hook failed: ${describeError(error)}`));
    }
    return output;
  }

  async #taskRoutine(task: TaskSpec, document: ProtocolDocument): Promise<TaskRoutine | undefined> {
    if (!this.#client.extensions.taskRoutine) return undefined;
    try {
      return await this.#client.extensions.taskRoutine(task, document);
    } catch (error) {
      this.#client.logger.warn(`task "${task.name}": no sender routine for "${document.metadata.name}": ${describeError(error)}`);
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
      const chosen = await this.#client.knownDocument(state.protocolHash, base, signal);
      if (chosen) return chosen;
      this.#client.logger.warn(`task "${task.name}": protocol ${state.protocolHash} is no longer available, looking again`);
      await this.#updateState(key, (current) => void (current.protocolHash = null));
    }
    if (!this.#client.llm || state.uses < this.#lookFrom) return undefined;
    for (const candidate of await this.#candidates(base, state, signal)) {
      let fits = state.verdicts[candidate.hash];
      if (fits === undefined) {
        fits = await this.#judgeFit(task, schemas, candidate, meter, signal);
        const verdict = fits;
        await this.#updateState(key, (current) => void (current.verdicts[candidate.hash] = verdict));
        this.#client.logger.info(`task "${task.name}": protocol "${candidate.metadata.name}" ${candidate.hash} judged ${fits ? 'a fit' : 'no fit'}`);
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
      const result = await this.#client.negotiate(
        base,
        { name: task.name, description: task.description, ...(schemas.input ? { inputSchema: schemas.input } : {}), ...(schemas.output ? { outputSchema: schemas.output } : {}) },
        this.#sink(meter),
        signal,
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
      this.#client.logger.warn(`task "${task.name}": negotiation with ${base} failed: ${describeError(error)}`);
      await this.#updateState(key, (current) => void (current.negotiation = { outcome: 'failed', error: error instanceof Error ? error.message : String(error), at: new Date().toISOString() }));
      return undefined;
    }
  }

  /** Candidate PDs for a target: those its `/wellknown` lists (and serves), then those in `<dir>/protocols/`. */
  async #candidates(base: string, state: TaskState, signal?: AbortSignal): Promise<ProtocolDocument[]> {
    const found = new Map<string, ProtocolDocument>();
    try {
      const listing = (await this.#client.listing(base, signal)) ?? {};
      for (const [key, sources] of Object.entries(listing)) {
        const hash = normalizeHash(key);
        // A PD judged unfit is not fetched again.
        if (!hash || state.verdicts[hash] === false || found.has(hash)) continue;
        const document = await this.#client.peerDocument(base, hash, sources, signal);
        if (document) found.set(hash, document);
      }
    } catch (error) {
      this.#client.logger.warn(`looking for protocols at ${base}: ${describeError(error)}`);
    }
    for (const document of await this.#client.localDocuments()) if (!found.has(document.hash) && state.verdicts[document.hash] !== false) found.set(document.hash, document);
    return [...found.values()];
  }

  // --- LLM steps -----------------------------------------------------------------------------------------------

  #requireLlm(task: TaskSpec): LanguageModel {
    if (!this.#client.llm) throw new AgoraError('LLM_UNAVAILABLE', `task "${task.name}" needs an LLM (or a sender routine under a protocol)`);
    return this.#client.llm;
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
    lines.push('', 'The other agent replied:', jsonText(reply));
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

  /** A usage sink for one task call: counts the call in the meter, then in the client. */
  #sink(meter: Meter): UsageSink {
    return (usage) => {
      meter.calls += 1;
      this.#client.onUsage(usage);
    };
  }
}
