// Typed tasks: natural language first, then a fitting or negotiated PD as they are used. The lifecycle lives here;
// the LLM's steps in task-llm.ts, the remembered state in task-state.ts.
import { z } from 'zod';
import { AgoraError, describeError, isAgoraError } from '../errors.js';
import type { LanguageModel, UsageSink } from '../llm/tool-loop.js';
import type { AgentMemory } from '../memory/file.js';
import { normalizeHash, type ProtocolDocument } from '../protocol/document.js';
import { toJsonValue, type JsonValue } from '../schemas.js';
import { sendOnce } from './conversation.js';
import { hubCandidates, type HubBackoff } from './hub-candidates.js';
import { negotiateWithPeer, type NegotiationParts } from './negotiate.js';
import {
  judgeFit,
  readReply,
  taskSchemas,
  writeBody,
  type TaskLlm,
  type TaskSchemas,
  type TaskSpec,
} from './task-llm.js';
import { TaskStates, type TaskState } from './task-state.js';
import { agentBaseUrl } from './transport.js';

export type { TaskState } from './task-state.js';

/** When a typed task looks for a protocol and when it negotiates one (uses per task and target, 1-based). */
export type SenderThresholds = {
  /** From this use on, look for a fitting PD (default 6, as the Python SDK). */
  lookForProtocolFrom?: number;
  /** From this use on, with no fitting PD, negotiate one (default 11). */
  negotiateFrom?: number;
};

export type { TaskSpec } from './task-llm.js';

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
export type TaskFunction<Input, Output> = (
  input: Input,
  options: { target: string; signal?: AbortSignal },
) => Promise<Output>;

/** What typed tasks use of the sender: its wire and documents, its LLM, memory and extensions, and its usage count. */
export type TaskParts = NegotiationParts & { memory: AgentMemory; extensions: SenderExtensions; onUsage: UsageSink };

/** One task call: what it is, where it goes, and its LLM calls so far. */
type Call = {
  task: TaskSpec;
  schemas: TaskSchemas;
  base: string;
  key: string;
  calls: number;
  signal: AbortSignal | undefined;
};

/**
 * Typed tasks of a sender: natural language first, then a fitting or negotiated PD as they are used, with their
 * counters and fit verdicts kept per (task, target) in the sender's memory.
 */
export class TaskRunner {
  readonly #parts: TaskParts;
  readonly #states: TaskStates;
  readonly #lookFrom: number;
  readonly #negotiateFrom: number;
  readonly #negotiations = new Map<string, Promise<ProtocolDocument | undefined>>();
  readonly #hubBackoff: HubBackoff = { until: 0 };

  constructor(parts: TaskParts, thresholds: SenderThresholds = {}) {
    this.#parts = parts;
    this.#states = new TaskStates(parts.memory);
    this.#lookFrom = thresholds.lookForProtocolFrom ?? 6;
    this.#negotiateFrom = thresholds.negotiateFrom ?? 11;
  }

  /** A typed task bound to the sender: each call runs the lifecycle for its target. */
  task<Input, Output>(spec: TaskSpec<Input, Output>): TaskFunction<Input, Output> {
    const task = spec as unknown as TaskSpec;
    const schemas = taskSchemas(task);
    return async (input, options) => (await this.#run(task, schemas, input, options.target, options.signal)) as Output;
  }

  /** What a task remembers about a target. */
  async state(taskName: string, target: string): Promise<TaskState> {
    return this.#states.read(this.#states.key(taskName, agentBaseUrl(target)));
  }

  async #run(
    task: TaskSpec,
    schemas: TaskSchemas,
    rawInput: unknown,
    target: string,
    signal?: AbortSignal,
  ): Promise<unknown> {
    const checked = task.input.safeParse(rawInput);
    if (!checked.success)
      throw new AgoraError('BAD_REQUEST', `task "${task.name}": invalid input: ${z.prettifyError(checked.error)}`);
    const input = checked.data;
    const base = agentBaseUrl(target);
    const call: Call = { task, schemas, base, key: this.#states.key(task.name, base), calls: 0, signal };
    const state = await this.#states.update(call.key, (current) => void (current.uses += 1));
    const document = await this.#chooseDocument(call, state);
    const routine = document ? await this.#taskRoutine(task, document) : undefined;

    let body: JsonValue | undefined;
    if (routine) {
      try {
        body = toJsonValue(await routine.buildBody(input), "the routine's body");
      } catch (error) {
        this.#parts.logger.warn(
          `task "${task.name}": sender routine failed to build the body, the LLM writes it: ${describeError(error)}`,
        );
      }
    }
    body ??= await writeBody(this.#llm(call), task, schemas, document, input);

    let reply: { body: JsonValue };
    try {
      reply = await sendOnce(this.#parts, base, document, body, signal);
    } catch (error) {
      // The peer refusing the PD says it does not fit this target after all: the next call looks again.
      if (
        document &&
        isAgoraError(error) &&
        error.code === 'PEER_FAILURE' &&
        /unsupported protocol|not suitable|failed to download protocol/i.test(error.message)
      ) {
        await this.#states.update(call.key, (current) => {
          current.verdicts[document.hash] = false;
          if (current.protocolHash === document.hash) current.protocolHash = null;
        });
        this.#parts.logger.warn(
          `task "${task.name}": ${base} refused protocol "${document.metadata.name}" ${document.hash}: ${error.message}`,
        );
      }
      throw error;
    }

    let output: unknown;
    let parsedByRoutine = false;
    if (routine) {
      try {
        const parsed = task.output.safeParse(await routine.parseReply(reply.body));
        if (!parsed.success)
          throw new AgoraError(
            'INVALID_OUTPUT',
            `output does not match the task's schema: ${z.prettifyError(parsed.error)}`,
          );
        output = parsed.data;
        parsedByRoutine = true;
      } catch (error) {
        this.#parts.logger.warn(
          `task "${task.name}": sender routine failed to read the reply, the LLM reads it: ${describeError(error)}`,
        );
      }
    }
    if (!parsedByRoutine) output = await readReply(this.#llm(call), task, schemas, document, input, reply.body);

    const served = this.#parts.extensions.served;
    if (served) {
      const event: TaskServedEvent = {
        task: task.name,
        target: base,
        hash: document?.hash ?? null,
        input,
        body,
        reply: reply.body,
        output,
        llmCalls: call.calls,
      };
      Promise.resolve()
        .then(() => served(event))
        .catch((error: unknown) => this.#parts.logger.error(`served hook failed: ${describeError(error)}`));
    }
    return output;
  }

  async #taskRoutine(task: TaskSpec, document: ProtocolDocument): Promise<TaskRoutine | undefined> {
    if (!this.#parts.extensions.taskRoutine) return undefined;
    try {
      return await this.#parts.extensions.taskRoutine(task, document);
    } catch (error) {
      this.#parts.logger.warn(
        `task "${task.name}": no sender routine for "${document.metadata.name}": ${describeError(error)}`,
      );
      return undefined;
    }
  }

  /** The PD a task call uses with a target: the one chosen before, a fitting one, a negotiated one, or none. */
  async #chooseDocument(call: Call, state: TaskState): Promise<ProtocolDocument | undefined> {
    const { task, key } = call;
    if (state.protocolHash) {
      const chosen = await this.#parts.documents.known(state.protocolHash, call.base, call.signal);
      if (chosen) return chosen;
      this.#parts.logger.warn(
        `task "${task.name}": protocol ${state.protocolHash} is no longer available, looking again`,
      );
      await this.#states.update(key, (current) => void (current.protocolHash = null));
    }
    if (!this.#parts.llm || state.uses < this.#lookFrom) return undefined;
    for (const candidate of await this.#candidates(call, state)) {
      let fits = state.verdicts[candidate.hash];
      if (fits === undefined) {
        fits = await judgeFit(this.#llm(call), task, call.schemas, candidate);
        const verdict = fits;
        await this.#states.update(key, (current) => void (current.verdicts[candidate.hash] = verdict));
        this.#parts.logger.info(
          `task "${task.name}": protocol "${candidate.metadata.name}" ${candidate.hash} judged ${fits ? 'a fit' : 'no fit'}`,
        );
      }
      if (fits) {
        await this.#states.update(key, (current) => void (current.protocolHash = candidate.hash));
        return candidate;
      }
    }
    if (state.uses < this.#negotiateFrom || state.negotiation) return undefined;
    // Concurrent calls at the threshold share one negotiation.
    let pending = this.#negotiations.get(key);
    if (!pending) {
      pending = this.#negotiate(call).finally(() => this.#negotiations.delete(key));
      this.#negotiations.set(key, pending);
    }
    return pending;
  }

  async #negotiate(call: Call): Promise<ProtocolDocument | undefined> {
    const { task, schemas, base, key } = call;
    try {
      const result = await negotiateWithPeer(
        this.#parts,
        base,
        {
          name: task.name,
          description: task.description,
          ...(schemas.input ? { inputSchema: schemas.input } : {}),
          ...(schemas.output ? { outputSchema: schemas.output } : {}),
        },
        { onUsage: this.#sink(call), signal: call.signal },
      );
      const hash = result.document.hash;
      await this.#states.update(key, (current) => {
        current.protocolHash = hash;
        current.verdicts[hash] = true;
        current.negotiation = {
          outcome: 'agreed',
          hash,
          rounds: result.rounds,
          at: new Date().toISOString(),
          ...(result.path ? { path: result.path } : {}),
        };
      });
      return result.document;
    } catch (error) {
      // A failed negotiation is not a failed task: natural language still works, and it is not tried again.
      this.#parts.logger.warn(`task "${task.name}": negotiation with ${base} failed: ${describeError(error)}`);
      await this.#states.update(
        key,
        (current) =>
          void (current.negotiation = {
            outcome: 'failed',
            error: error instanceof Error ? error.message : String(error),
            at: new Date().toISOString(),
          }),
      );
      return undefined;
    }
  }

  /**
   * Candidate PDs for a target: those its `/wellknown` lists (and serves), then those the hub finds for the task
   * (when the sender has one), then those in `<dir>/protocols/`.
   */
  async #candidates(call: Call, state: TaskState): Promise<ProtocolDocument[]> {
    const { base, signal } = call;
    const found = new Map<string, ProtocolDocument>();
    try {
      const listing = (await this.#parts.documents.listing(base, signal)) ?? {};
      for (const [key, sources] of Object.entries(listing)) {
        const hash = normalizeHash(key);
        // A PD judged unfit is not fetched again.
        if (!hash || state.verdicts[hash] === false || found.has(hash)) continue;
        const document = await this.#parts.documents.peer(base, hash, sources, signal);
        if (document) found.set(hash, document);
      }
    } catch (error) {
      this.#parts.logger.warn(`looking for protocols at ${base}: ${describeError(error)}`);
    }
    if (this.#parts.hub) {
      const skip = (hash: string) => found.has(hash) || state.verdicts[hash] === false;
      for (const document of await hubCandidates(
        this.#parts.hub,
        this.#parts.documents,
        call.task,
        skip,
        this.#parts.logger,
        this.#hubBackoff,
      ))
        found.set(document.hash, document);
    }
    for (const document of await this.#parts.documents.local())
      if (!found.has(document.hash) && state.verdicts[document.hash] !== false) found.set(document.hash, document);
    return [...found.values()];
  }

  /** The LLM for a step of this call, or LLM_UNAVAILABLE. */
  #llm(call: Call): TaskLlm {
    const llm: LanguageModel | undefined = this.#parts.llm;
    if (!llm)
      throw new AgoraError(
        'LLM_UNAVAILABLE',
        `task "${call.task.name}" needs an LLM (or a sender routine under a protocol)`,
      );
    return { llm, onUsage: this.#sink(call), signal: call.signal };
  }

  /** A usage sink for one task call: counts the call in it, then in the sender. */
  #sink(call: Call): UsageSink {
    return (usage) => {
      call.calls += 1;
      this.#parts.onUsage(usage);
    };
  }
}
