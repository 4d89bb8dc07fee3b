// Typed tasks: natural language first, then a fitting or negotiated PD as they are used. The lifecycle lives here;
// the LLM's steps in task-llm.ts, the remembered state in task-state.ts.
import { z } from 'zod';
import { AgoraError, describeError, isAgoraError } from '../errors.js';
import type { LanguageModel, UsageSink } from '../llm/model.js';
import type { AgentMemory } from '../memory/file.js';
import type { ProtocolDocument } from '../protocol/document.js';
import { toJsonValue, type JsonValue } from '../schemas.js';
import { SENDER_DEFAULTS, type SenderThresholds } from './config.js';
import { sendOnce } from './conversation.js';
import type { NegotiationParts } from './negotiate.js';
import { readReply, taskSchemas, writeBody, type TaskLlm, type TaskSchemas, type TaskSpec } from './task-llm.js';
import { TaskProtocols, type TaskCall } from './task-protocol.js';
import { TaskStates, type TaskState } from './task-state.js';
import { agentBaseUrl } from './transport.js';

export type { SenderThresholds } from './config.js';
export type { TaskState } from './task-state.js';

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

/**
 * Typed tasks of a sender: natural language first, then a fitting or negotiated PD as they are used, with their
 * counters and fit verdicts kept per (task, target) in the sender's memory.
 */
export class TaskRunner {
  readonly #parts: TaskParts;
  readonly #states: TaskStates;
  readonly #protocols: TaskProtocols;

  constructor(parts: TaskParts, thresholds: Required<SenderThresholds> = SENDER_DEFAULTS.thresholds) {
    this.#parts = parts;
    this.#states = new TaskStates(parts.memory);
    this.#protocols = new TaskProtocols(parts, this.#states, thresholds, {
      llm: (call) => this.#llm(call),
      sink: (call) => this.#sink(call),
    });
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
    const call: TaskCall = { task, schemas, base, key: this.#states.key(task.name, base), calls: 0, signal };
    const state = await this.#states.update(call.key, (current) => void (current.uses += 1));
    const document = await this.#protocols.choose(call, state);
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

  /** The LLM for a step of this call, or LLM_UNAVAILABLE. */
  #llm(call: TaskCall): TaskLlm {
    const llm: LanguageModel | undefined = this.#parts.llm;
    if (!llm)
      throw new AgoraError(
        'LLM_UNAVAILABLE',
        `task "${call.task.name}" needs an LLM (or a sender routine under a protocol)`,
      );
    return { llm, onUsage: this.#sink(call), signal: call.signal };
  }

  /** A usage sink for one task call: counts the call in it, then in the sender. */
  #sink(call: TaskCall): UsageSink {
    return (usage) => {
      call.calls += 1;
      this.#parts.onUsage(usage);
    };
  }
}
