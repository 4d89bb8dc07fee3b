// Routines written by the LLM, sender side: a task performed under a PD costs two LLM calls (build the body, read
// the reply); after enough of them the LLM writes `{ buildBody, parseReply }` in code, checked on the recorded
// calls, and approved like a receiver routine (./generate.ts, ./lifecycle/review.ts).
import { z, type ZodType } from 'zod';
import { describeError } from '../errors.js';
import { prescribesJson } from '../llm/peer-answers.js';
import type { LanguageModel } from '../llm/model.js';
import { silentLogger, type Logger } from '../log.js';
import { normalizeHash, type ProtocolDocument } from '../protocol/document.js';
import type { JsonValue } from '../schemas.js';
import type { TaskServedEvent } from '../sender/tasks.js';
import { EXAMPLE_CAP, RoutineKeeper } from './lifecycle/book.js';
import type { RoutineGeneratorOptions } from './generate.js';
import { exchangesBlock, protocolBlock, TASK_SYSTEM } from './writing/prompts.js';
import { taskPrefix, taskStem, type RoutineStatus } from './lifecycle/records.js';
import { RoutineTypeChecker } from './checks/typecheck.js';
import {
  FENCE,
  preview,
  sameValue,
  writeCheckedModule,
  type GenerationUsageSink,
  type ModuleChecks,
  type WrittenModule,
} from './writing/write.js';
import { plural } from '../_plural.js';

/** A task as the sender's LLM-written routines see it: its schemas as JSON Schema. */
export type TaskRoutineSpec = {
  name: string;
  description: string;
  inputJsonSchema: unknown;
  outputJsonSchema: unknown;
};

/** A recorded task call: the task's input, the body sent, the reply received, the task's output. */
export type TaskExample = { input: unknown; body: unknown; reply: unknown; output: unknown };

/** Options of {@link generateTaskRoutine}. */
export type GenerateTaskRoutineOptions = {
  llm: LanguageModel;
  task: TaskRoutineSpec;
  document: ProtocolDocument;
  examples: readonly TaskExample[];
  maxAttempts?: number;
  timeoutMs?: number;
  memoryLimitMb?: number;
  /** Extra check of each output (e.g. the task's zod schema): a message when it is wrong. */
  validateOutput?: (output: unknown) => string | undefined;
  typeChecker?: RoutineTypeChecker;
  logger?: Logger;
  onUsage?: GenerationUsageSink;
};

/**
 * Writes a sender routine (`export default { buildBody, parseReply }`) for a task under a PD with the LLM, then
 * type-checks it and runs it in the QuickJS sandbox on the recorded calls: bodies and outputs must equal the recorded
 * ones.
 */
export async function generateTaskRoutine(options: GenerateTaskRoutineOptions): Promise<WrittenModule> {
  const typeChecker = options.typeChecker ?? new RoutineTypeChecker();
  const json = prescribesJson(options.document);
  const { task, document } = options;
  const examples = options.examples.slice(-EXAMPLE_CAP);
  const prompt = [
    `The task: ${task.name}: ${task.description}`,
    `Its input (JSON Schema): ${JSON.stringify(task.inputJsonSchema)}`,
    `Its output (JSON Schema): ${JSON.stringify(task.outputJsonSchema)}`,
    '',
    'The protocol document:',
    protocolBlock(document),
    '',
    "Recorded calls, made by the agent's LLM:",
    exchangesBlock(
      examples.map(
        (example, index) =>
          `${index + 1}. input ${JSON.stringify(example.input)} → body ${JSON.stringify(example.body)}; reply ${JSON.stringify(example.reply)} → output ${JSON.stringify(example.output)}`,
      ),
    ),
  ].join('\n');
  const check: ModuleChecks = async (module) => {
    const errors: string[] = [];
    let checked = 0;
    for (const [index, example] of examples.entries()) {
      const label = `recorded call ${index + 1}`;
      try {
        const body = (await module.run('buildBody', example.input)).value;
        if (json ? !sameValue(body, example.body) : typeof body !== typeof example.body) {
          errors.push(
            `${label}: buildBody(${preview(example.input)}) returned ${preview(body)} but the recorded body is ${preview(example.body)}`,
          );
        }
        const output = (await module.run('parseReply', example.reply)).value;
        if (!sameValue(output, example.output))
          errors.push(
            `${label}: parseReply(${preview(example.reply)}) returned ${preview(output)} but the recorded output is ${preview(example.output)}`,
          );
        const invalid = options.validateOutput?.(output);
        if (invalid) errors.push(`${label}: parseReply's output does not match the task's output schema: ${invalid}`);
        checked++;
      } catch (error) {
        errors.push(`${label}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    if (!errors.length && checked === 0) errors.push('nothing to check the routine on: no recorded call');
    return { errors, passed: checked ? [`${plural(checked, 'recorded call')} (body and output by value)`] : [] };
  };
  try {
    return await writeCheckedModule({
      llm: options.llm,
      system: TASK_SYSTEM,
      prompt,
      kind: 'task',
      maxAttempts: options.maxAttempts ?? 3,
      typeChecker,
      sandbox: { timeoutMs: options.timeoutMs ?? 2000, memoryLimitMb: options.memoryLimitMb ?? 64 },
      check,
      label: `task "${task.name}"`,
      usageLabel: document.metadata.name,
      logger: options.logger ?? silentLogger,
      ...(options.onUsage ? { onUsage: options.onUsage } : {}),
    });
  } finally {
    if (!options.typeChecker) await typeChecker.close();
  }
}

/** A task as the sender knows it (the shape of `SenderExtensions.taskRoutine`'s first argument). */
export type TaskDefinition = { name: string; description: string; input: ZodType; output: ZodType };

/** A sender routine, run in the QuickJS sandbox: what `SenderExtensions.taskRoutine` returns. */
export type TaskRoutineRunner = {
  buildBody(input: unknown): Promise<unknown>;
  parseReply(body: unknown): Promise<unknown>;
};

/** What the sender reports after each task call (the shape of `SenderExtensions.served`'s argument). */
export type TaskCallEvent = TaskServedEvent;

/**
 * Options of {@link TaskRoutineStore}: as {@link RoutineGeneratorOptions}, without tools (sender routines are pure).
 */
export type TaskRoutineStoreOptions = Omit<RoutineGeneratorOptions, 'tools' | 'profile' | 'checkQueries'>;

function jsonSchemaOf(schema: ZodType, io: 'input' | 'output'): unknown {
  try {
    const json = z.toJSONSchema(schema, { unrepresentable: 'any', io }) as Record<string, unknown>;
    delete json.$schema;
    return json;
  } catch {
    return {};
  }
}

function jsonCopy(value: unknown): JsonValue {
  const text = JSON.stringify(value);
  return text === undefined ? null : (JSON.parse(text) as JsonValue);
}

/**
 * Sender routines by task and PD: records LLM-made task calls as examples, writes a routine after the threshold, and
 * hands out sandboxed runners once approved. Plug it into a Sender with `extensions: store.extensions()`.
 * @example
 * const store = new TaskRoutineStore({ dir, memory, llm });
 * const sender = new Sender({ llm, extensions: store.extensions() });
 */
export class TaskRoutineStore extends RoutineKeeper {
  readonly #options: TaskRoutineStoreOptions;
  readonly #tasks = new Map<string, { task: TaskDefinition; document: ProtocolDocument }>();
  /** Prefixes past the threshold whose task definition was not known yet when the last call was counted. */
  readonly #due = new Set<string>();

  constructor(options: TaskRoutineStoreOptions) {
    super(options);
    this.#options = options;
  }

  /** The sender hooks: `taskRoutine` and `served`. */
  extensions(): {
    taskRoutine(task: TaskDefinition, document: ProtocolDocument): Promise<TaskRoutineRunner | undefined>;
    served(event: TaskCallEvent): Promise<void>;
  } {
    return { taskRoutine: (task, document) => this.taskRoutine(task, document), served: (event) => this.served(event) };
  }

  /** The approved routine for a task under a PD, as sandboxed functions; undefined when none is approved. */
  async taskRoutine(task: TaskDefinition, document: ProtocolDocument): Promise<TaskRoutineRunner | undefined> {
    const prefix = taskPrefix(task.name, document.hash);
    this.#tasks.set(prefix, { task, document });
    if (this.#due.delete(prefix)) this.#start(prefix);
    if (!(await this.book.approved(prefix))) return undefined;
    const label = `task "${task.name}"`;
    const call = (method: 'buildBody' | 'parseReply', payload: unknown): Promise<unknown> =>
      this.book.run(prefix, label, async (module) => {
        const value: unknown = (await module.run(method, jsonCopy(payload))).value;
        if (method !== 'parseReply') return value;
        const parsed = task.output.safeParse(value);
        if (!parsed.success)
          throw new Error(`the output does not match the task's schema: ${z.prettifyError(parsed.error)}`);
        return parsed.data;
      });
    return { buildBody: (input) => call('buildBody', input), parseReply: (body) => call('parseReply', body) };
  }

  /** Counts a task call, keeps LLM-made calls as examples, and writes a routine at the threshold. */
  served(event: TaskCallEvent): Promise<void> {
    return this.book.track(this.#served(event));
  }

  async #served(event: TaskCallEvent): Promise<void> {
    const hash = event.hash === null ? undefined : normalizeHash(event.hash);
    if (!hash) return;
    const prefix = taskPrefix(event.task, hash);
    const known = this.#tasks.get(prefix);
    await this.book.remember(prefix, {
      kind: 'task',
      task: event.task,
      protocol: known?.document.metadata.name ?? '',
      hash,
    });
    this.book.count(prefix, 'uses');
    if (event.llmCalls === 0) {
      this.book.count(prefix, 'routine');
      return;
    }
    await this.book.addExample(`${prefix}/examples`, {
      input: jsonCopy(event.input),
      body: jsonCopy(event.body),
      reply: jsonCopy(event.reply),
      output: jsonCopy(event.output),
      at: this.book.timestamp(),
    });
    if (!(await this.book.due(prefix))) return;
    if (known) this.#start(prefix);
    else this.#due.add(prefix);
  }

  #start(prefix: string): void {
    const known = this.#tasks.get(prefix);
    if (!known) return;
    this.generate(known.task, known.document).catch((error: unknown) =>
      this.book.logger.error(`task "${known.task.name}": writing a routine failed: ${describeError(error)}`),
    );
  }

  /** Writes and checks a sender routine for a task under a PD now, from the recorded calls. */
  generate(task: TaskDefinition, document: ProtocolDocument): Promise<RoutineStatus> {
    const prefix = taskPrefix(task.name, document.hash);
    this.#tasks.set(prefix, { task, document });
    const protocol = document.metadata.name;
    return this.book.generate({
      prefix,
      names: { kind: 'task', task: task.name, protocol, hash: document.hash },
      stem: taskStem(task.name, document.hash),
      what: `Task: ${task.name}, under protocol: ${protocol}`,
      label: `task "${task.name}"`,
      noun: 'sender routine',
      fallback: 'the LLM keeps doing it',
      // What `served` remembered may lack the protocol's name (the task was not known yet), or be missing.
      started: () =>
        this.book.memory.set(`${prefix}/meta`, { kind: 'task', task: task.name, protocol, hash: document.hash }),
      write: async () => {
        const examples = (await this.book.examples(`${prefix}/examples`)).map((example) => ({
          input: example.input,
          body: example.body,
          reply: example.reply,
          output: example.output,
        }));
        return generateTaskRoutine({
          llm: this.#options.llm,
          task: {
            name: task.name,
            description: task.description,
            inputJsonSchema: jsonSchemaOf(task.input, 'input'),
            outputJsonSchema: jsonSchemaOf(task.output, 'output'),
          },
          document,
          examples,
          typeChecker: this.book.typeChecker,
          logger: this.book.logger,
          validateOutput: (output) => {
            const parsed = task.output.safeParse(output);
            return parsed.success ? undefined : z.prettifyError(parsed.error);
          },
          ...(this.#options.maxAttempts !== undefined ? { maxAttempts: this.#options.maxAttempts } : {}),
          ...(this.#options.timeoutMs !== undefined ? { timeoutMs: this.#options.timeoutMs } : {}),
          ...(this.#options.memoryLimitMb !== undefined ? { memoryLimitMb: this.#options.memoryLimitMb } : {}),
          ...(this.#options.onUsage ? { onUsage: this.#options.onUsage } : {}),
        });
      },
    });
  }
}
