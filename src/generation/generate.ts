// Routines written by the LLM (spec §6), receiver side: after enough LLM-served uses of a protocol, the LLM writes a
// TypeScript module; it is built, type-checked and run against recorded and fresh examples before anyone may approve
// it, and it runs in a QuickJS sandbox with a time, CPU and memory limit (./sandbox/quickjs.ts). The sender side is
// ./task-routines.ts, the review (`agora routines`) ./lifecycle/review.ts.
import { z } from 'zod';
import { describeError } from '../errors.js';
import { answerUnderProtocol, extractJson, prescribesJson, type AgentProfile } from '../llm/peer-answers.js';
import { converse } from '../llm/tool-loop.js';
import { type LanguageModel, type LlmUsage } from '../llm/model.js';
import { silentLogger, type Logger } from '../log.js';
import type { AgentMemory } from '../memory/file.js';
import type { ProtocolDocument } from '../protocol/document.js';
// Types only: the receiver imports nothing from here, it receives these functions through its extensions.
import type { ReceiverExtensions, RoutineRunner, ServedEvent } from '../receiver.js';
import type { JsonObject, JsonValue } from '../schemas.js';
import type { Tool } from '../tool/define.js';
import { RoutineKeeper } from './lifecycle/book.js';
import { answerOf, checkRoutine, parseStoredExample, type Probe } from './checks/checks.js';
import { protocolBlock, QUERIES_SYSTEM, ROUTINE_SYSTEM, routinePrompt, type StoredExample } from './writing/prompts.js';
import { protocolPrefix, protocolStem, type RoutineStatus } from './lifecycle/records.js';
import type { RoutineTypeChecker } from './checks/typecheck.js';
import { askTwice } from './checks/value-check.js';
import { preview, writeCheckedModule, type GenerationUsageSink } from './writing/write.js';

/** Options of {@link RoutineGenerator}. */
export type RoutineGeneratorOptions = {
  /** The agent folder: modules are written to `<dir>/routines/generated/`. */
  dir: string;
  memory: AgentMemory;
  llm: LanguageModel;
  /** The agent's tools, read when a routine is written, checked or run. */
  tools: () => readonly Tool[];
  /**
   * How the agent presents itself to its LLM when the checks ask it for reference answers (default: its tools only).
   */
  profile?: () => AgentProfile;
  logger?: Logger;
  /** LLM-served conversations under a protocol before a routine is written (default 5; 0 never writes one). */
  threshold?: number;
  /** LLM attempts at a module that passes the checks (default 3). */
  maxAttempts?: number;
  /** Use a routine as soon as it passes the checks, without review (default false). */
  autoApprove?: boolean;
  /** Time limit per run, in ms (default 2000). */
  timeoutMs?: number;
  /** The whole memory of a routine's QuickJS sandbox, in MB (default 64): every allocation counts. */
  memoryLimitMb?: number;
  /** Failures in a row before a routine is disabled (default 3). */
  maxFailures?: number;
  /** Queries the LLM writes from the PD to check a routine on, besides the recorded ones (default 3). */
  checkQueries?: number;
  /** Called after each LLM call made to write or check a routine, with the protocol's name. */
  onUsage?: GenerationUsageSink;
  /** Told after each status this process writes (a routine written, failed, disabled): the dashboard's cue. */
  onStatus?: (status: RoutineStatus) => void;
  /** A shared type checker (default: one of its own). */
  typeChecker?: RoutineTypeChecker;
  /** Clock in Unix milliseconds. */
  now?: () => number;
};

/**
 * Writes routines for the protocols the LLM serves most, with the LLM, checked before they run; serves the
 * approved ones from QuickJS sandboxes. Plug it into a Receiver with `extensions: generator.extensions()`.
 * @example
 * const generator = new RoutineGenerator({ dir, memory, llm, tools: () => receiver.tools });
 * const receiver = await Receiver.start({ dir, memory, llm, extensions: generator.extensions() });
 */
export class RoutineGenerator extends RoutineKeeper {
  readonly #options: RoutineGeneratorOptions;
  readonly #runners = new Map<string, RoutineRunner>();

  constructor(options: RoutineGeneratorOptions) {
    super(options);
    this.#options = options;
  }

  /** The receiver hooks: `routineFor` (approved routines only) and `served` (counting, examples, generation). */
  extensions(): Pick<ReceiverExtensions, 'routineFor' | 'served'> {
    return {
      routineFor: (hash, document) => this.routineFor(hash, document),
      served: (event) => this.served(event),
    };
  }

  /**
   * Counts an answered turn, keeps LLM answers as examples, and starts writing a routine at the threshold. A
   * routine-served turn under a protocol already remembered is counted in the batch at once: no promise, no await.
   */
  served(event: ServedEvent): Promise<void> | undefined {
    if (event.hash === null || !event.document || event.path === 'failure') return undefined;
    const prefix = protocolPrefix(event.document.hash);
    if (event.path === 'routine' && this.book.remembers(prefix)) {
      this.#countRoutine(prefix, event);
      return undefined;
    }
    return this.book.track(this.#served(event, event.document, prefix));
  }

  #countRoutine(prefix: string, event: ServedEvent): void {
    if (!event.firstTurn) return;
    this.book.count(prefix, 'uses');
    this.book.count(prefix, 'routine');
  }

  async #served(event: ServedEvent, document: ProtocolDocument, prefix: string): Promise<void> {
    await this.book.remember(prefix, { kind: 'protocol', protocol: document.metadata.name, hash: document.hash });
    if (event.path === 'routine') return this.#countRoutine(prefix, event);
    if (event.firstTurn) this.book.count(prefix, 'uses');
    if (event.reply !== undefined) {
      await this.book.addExample(`examples/${document.hash}`, {
        conversationId: event.conversationId,
        turn: event.turn,
        body: event.body,
        reply: event.reply,
        at: this.book.timestamp(),
      });
    }
    if (!event.firstTurn) return;
    if (!(await this.book.due(prefix))) return;
    this.generate(document).catch((error: unknown) =>
      this.book.logger.error(`"${document.metadata.name}": writing a routine failed: ${describeError(error)}`),
    );
  }

  /**
   * A runner for an approved routine with its file in place, else undefined (approval is re-read every second):
   * without a promise while the approval read is fresh, so the receiver routes the query without an await.
   */
  routineFor(hash: string, document: ProtocolDocument): RoutineRunner | undefined | Promise<RoutineRunner | undefined> {
    const prefix = protocolPrefix(hash);
    const approved = this.book.approved(prefix);
    if (typeof approved === 'boolean') return approved ? this.#runnerOf(hash, prefix, document) : undefined;
    return approved.then((usable) => (usable ? this.#runnerOf(hash, prefix, document) : undefined));
  }

  #runnerOf(hash: string, prefix: string, document: ProtocolDocument): RoutineRunner {
    let runner = this.#runners.get(hash);
    if (!runner) {
      runner = this.#runner(prefix, document);
      this.#runners.set(hash, runner);
    }
    return runner;
  }

  #runner(prefix: string, document: ProtocolDocument): RoutineRunner {
    const label = `"${document.metadata.name}"`;
    return (body, context) =>
      this.book.run(prefix, label, async (module) => {
        const result = await module.run('handle', body, {
          conversation: context.conversation,
          protocol: context.protocol,
          tools: context.tools,
          logger: context.logger,
        });
        const reply = answerOf(result, document);
        // The turn's state object is the one the receiver saves: refill it rather than replace it.
        if (result.state) {
          const state = context.conversation.state;
          for (const key of Object.keys(state)) delete state[key];
          Object.assign(state, result.state);
        }
        return reply;
      });
  }

  /** Writes and checks a routine for a protocol now (in the background it starts at the threshold). */
  generate(document: ProtocolDocument): Promise<RoutineStatus> {
    const name = document.metadata.name;
    return this.book.generate({
      prefix: protocolPrefix(document.hash),
      names: { kind: 'protocol', protocol: name, hash: document.hash },
      stem: protocolStem(name, document.hash),
      what: `Protocol: ${name}`,
      label: `"${name}"`,
      noun: 'routine',
      fallback: 'the LLM keeps serving it',
      started: () => this.book.logger.info(`"${name}": writing a routine with ${this.#options.llm.model}`),
      write: async () => {
        const examples = (await this.book.examples(`examples/${document.hash}`))
          .map(parseStoredExample)
          .filter((example): example is StoredExample => example !== undefined);
        let probes: Promise<Probe[]> | undefined;
        return writeCheckedModule({
          llm: this.#options.llm,
          system: ROUTINE_SYSTEM,
          prompt: routinePrompt(document, examples, this.#options.tools(), prescribesJson(document)),
          kind: 'routine',
          maxAttempts: this.#options.maxAttempts ?? 3,
          typeChecker: this.book.typeChecker,
          sandbox: this.book.sandbox,
          label: `"${name}"`,
          usageLabel: name,
          logger: this.book.logger,
          ...(this.#options.onUsage ? { onUsage: this.#options.onUsage } : {}),
          // The reference answers do not depend on the module: asked once, on the first attempt that builds.
          check: async (module) =>
            checkRoutine(module, document, examples, await (probes ??= this.#probes(document)), this.#options.tools()),
        });
      },
    });
  }

  /** Queries the LLM writes from the PD, each with the LLM responder's two answers (a failed one is left out). */
  async #probes(document: ProtocolDocument): Promise<Probe[]> {
    const count = this.#options.checkQueries ?? 3;
    if (count <= 0) return [];
    const json = prescribesJson(document);
    const onUsage = this.#options.onUsage
      ? (usage: LlmUsage & { model: string }) => this.#options.onUsage?.(usage, document.metadata.name)
      : undefined;
    let bodies: JsonValue[] = [];
    try {
      const prompt = [
        protocolBlock(document),
        '',
        `Write ${count} different bodies a sender could send as the first query under this protocol: typical ones, and one edge case the protocol covers (such as one of its error replies).`,
        `Reply with only a JSON array of the ${count} bodies${json ? '' : ' (strings)'}.`,
      ].join('\n');
      const result = await converse(this.#options.llm, {
        intent: { purpose: 'test-queries', protocol: { name: document.metadata.name, hash: document.hash } },
        system: QUERIES_SYSTEM,
        messages: [{ role: 'user', content: prompt }],
        maxSteps: 1,
        temperature: 0,
        ...(onUsage ? { onUsage } : {}),
      });
      const parsed = extractJson(result.text);
      const list = parsed.ok ? z.array(z.unknown()).safeParse(parsed.value) : undefined;
      if (list?.success) bodies = (list.data as JsonValue[]).slice(0, count);
      else this.book.logger.warn(`"${document.metadata.name}": the LLM wrote no usable test queries`);
    } catch (error) {
      this.book.logger.warn(`"${document.metadata.name}": no test queries: ${describeError(error)}`);
    }
    const tools = this.#options.tools();
    const profile = this.#options.profile?.() ?? { name: 'agent', description: '', protocols: [], tools };
    // Each body asked twice, each time afresh: where both answers agree, the routine must give that value.
    return askTwice(
      bodies,
      (body) =>
        answerUnderProtocol({ model: this.#options.llm, profile, ...(onUsage ? { onUsage } : {}) }, document, [], body),
      (body, error) =>
        this.book.logger.warn(
          `"${document.metadata.name}": no reference answer for ${preview(body, 80)}: ${describeError(error)}`,
        ),
    );
  }

  /** Writes batched counters and drops the sandboxes (a generation under way is abandoned, and retried later). */
  override async close(): Promise<void> {
    await super.close();
    this.#runners.clear();
  }
}
