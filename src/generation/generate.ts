// Routines written by the LLM (spec §6), receiver side: after enough LLM-served uses of a protocol, the LLM writes a
// TypeScript module; it is built, type-checked and run against recorded and fresh examples before anyone may
// approve it, and it runs in a worker thread with a time and memory limit (./sandbox.ts). The sender side is
// ./task-routines.ts, the review (`agora routines`) ./review.ts.
import { z } from 'zod';
import { describeError } from '../errors.js';
import { answerUnderProtocol, extractJson, prescribesJson, type AgentProfile } from '../llm/responders.js';
import { converse, type LanguageModel, type LlmUsage } from '../llm/toolformer.js';
import { silentLogger, type Logger } from '../log.js';
import type { AgentMemory } from '../memory/file.js';
import type { ProtocolDocument } from '../protocol/document.js';
// Types only: the receiver imports nothing from here, it receives these functions through its extensions.
import type { ReceiverExtensions, RoutineRunner, ServedEvent } from '../receiver.js';
import type { JsonObject, JsonValue } from '../schemas.js';
import { callTool, toolInputJsonSchema, type Tool } from '../tool/define.js';
import { RoutineKeeper } from './book.js';
import { protocolInvalidInputReply } from '../routine/run.js';
import type { SandboxedModule, SandboxResult } from './sandbox.js';
import { protocolPrefix, protocolStem, type RoutineStatus } from './status.js';
import type { RoutineTypeChecker } from './typecheck.js';
import { FENCE, preview, sameValue, writeCheckedModule, type GenerationUsageSink } from './write.js';

/** Options of {@link RoutineGenerator}. */
export type RoutineGeneratorOptions = {
  /** The agent folder: modules are written to `<dir>/routines/generated/`. */
  dir: string;
  memory: AgentMemory;
  llm: LanguageModel;
  /** The agent's tools, read when a routine is written, checked or run. */
  tools: () => readonly Tool[];
  /** How the agent presents itself to its LLM when the checks ask it for reference answers (default: its tools only). */
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
  /** Heap limit of a routine's worker, in MB (default 64). */
  memoryLimitMb?: number;
  /** Failures in a row before a routine is disabled (default 3). */
  maxFailures?: number;
  /** Queries the LLM writes from the PD to check a routine on, besides the recorded ones (default 3). */
  checkQueries?: number;
  /** Called after each LLM call made to write or check a routine, with the protocol's name. */
  onUsage?: GenerationUsageSink;
  /** A shared type checker (default: one of its own). */
  typeChecker?: RoutineTypeChecker;
  /** Clock in Unix milliseconds. */
  now?: () => number;
};

type StoredExample = { conversationId: string | null; turn: number; body: JsonValue; reply: JsonValue };

type Probe = { body: JsonValue; reply: JsonValue };

const ROUTINE_SYSTEM = [
  'You write routines for an agent on the Agora network. A routine is a TypeScript module that answers queries under a protocol document without an LLM, so that frequent queries cost nothing.',
  `Reply with the whole module in one ${FENCE}ts code block and nothing else.`,
  '',
  'The module must follow this contract exactly:',
  `${FENCE}ts`,
  "import { defineRoutine } from 'agora-agents';",
  "import { z } from 'zod';",
  '',
  'export default defineRoutine({',
  '  input: z.object({ /* the body the sender sends, as the protocol describes it */ }),',
  '  output: /* a zod schema accepting every reply the protocol allows, its error replies included */,',
  '  async handle(body, context) {',
  '    // body is the parsed input; return the reply body',
  '  },',
  '});',
  FENCE,
  '',
  'Rules:',
  "- Import only 'agora-agents' (defineRoutine and its types) and 'zod' (zod 4). No other import, no require(), no import(), no fetch, no file system, no process, no environment variables: the module runs in an isolated worker where none of these exist.",
  '- Data comes only from the agent\'s tools: `await context.tools.<name>(input)` validates the input, runs the tool and resolves to its output (typed unknown: check it with zod before use); it rejects when the tool fails.',
  '- For a multiround protocol, keep what later turns need in `context.conversation.state`, a JSON object you mutate; `context.conversation.turn` is 1 on the first turn.',
  '- Reply exactly as the protocol prescribes: the same JSON keys and value types as the recorded replies, and the protocol\'s own error replies where the body or the data calls for one.',
  '- When the body does not match the input schema, the protocol\'s "invalid" error reply is sent for you if the protocol prescribes one: do not make the input schema stricter than the protocol.',
  '- Be deterministic: the same body and tool outputs must give the same reply. No timers, no randomness.',
  '- The module is compiled with strict TypeScript. `context` is a RoutineContext: { conversation: { id: string | null; turn: number; state: JsonObject }; protocol: { name: string; hash: string; metadata: Record<string, unknown> }; logger: { info(message: string): void; warn(message: string): void; error(message: string): void }; tools: Record<string, (input: unknown) => Promise<unknown>>; signal: AbortSignal }.',
].join('\n');

const QUERIES_SYSTEM = 'You write test queries for a protocol document that two agents use to talk. Reply with only a JSON array, no prose, no code fence.';

function describeTools(tools: readonly Tool[]): string {
  if (!tools.length) return 'The agent has no tools: compute the reply from the body alone.';
  return [
    'The agent\'s tools (call them as `await context.tools.<name>(input)`):',
    ...tools.map((tool) => `- ${tool.name}: ${tool.description}\n  input (JSON Schema): ${JSON.stringify(toolInputJsonSchema(tool))}`),
  ].join('\n');
}

/** Recorded exchanges in conversation order; a conversation whose first turns were not recorded is left out. */
function replayable(examples: readonly StoredExample[]): StoredExample[][] {
  const groups = new Map<string, StoredExample[]>();
  examples.forEach((example, index) => {
    const key = example.conversationId ?? `single-${index}`;
    groups.set(key, [...(groups.get(key) ?? []), example]);
  });
  const result: StoredExample[][] = [];
  for (const turns of groups.values()) {
    const sorted = [...turns].sort((a, b) => a.turn - b.turn);
    if (sorted.every((example, index) => example.turn === index + 1)) result.push(sorted);
  }
  return result;
}

function parseStoredExample(value: JsonObject): StoredExample | undefined {
  if (!('body' in value) || !('reply' in value)) return undefined;
  const turn = typeof value.turn === 'number' ? value.turn : 1;
  const conversationId = typeof value.conversationId === 'string' ? value.conversationId : null;
  return { conversationId, turn, body: value.body as JsonValue, reply: value.reply as JsonValue };
}

/**
 * Writes routines for the protocols the LLM serves most, with the LLM, checked before they run; serves the
 * approved ones from worker threads. Plug it into a Receiver with `extensions: generator.extensions()`.
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

  /** Counts an answered turn, keeps LLM answers as examples, and starts writing a routine at the threshold. */
  served(event: ServedEvent): Promise<void> {
    return this.book.track(this.#served(event));
  }

  async #served(event: ServedEvent): Promise<void> {
    if (event.hash === null || !event.document || event.path === 'failure') return;
    const document = event.document;
    const prefix = protocolPrefix(document.hash);
    await this.book.remember(prefix, { kind: 'protocol', protocol: document.metadata.name, hash: document.hash });
    if (event.firstTurn) this.book.count(prefix, 'uses');
    if (event.path === 'routine') {
      if (event.firstTurn) this.book.count(prefix, 'routine');
      return;
    }
    if (event.reply !== undefined) {
      await this.book.addExample(`examples/${document.hash}`, { conversationId: event.conversationId, turn: event.turn, body: event.body, reply: event.reply, at: this.book.timestamp() });
    }
    if (!event.firstTurn) return;
    if (!(await this.book.due(prefix))) return;
    this.generate(document).catch((error: unknown) => this.book.logger.error(`"${document.metadata.name}": writing a routine failed: ${describeError(error)}`));
  }

  /** A runner for an approved routine with its file in place, else undefined (approval is re-read every second). */
  async routineFor(hash: string, document: ProtocolDocument): Promise<RoutineRunner | undefined> {
    const prefix = protocolPrefix(hash);
    if (!(await this.book.approved(prefix))) return undefined;
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
        const examples = (await this.book.examples(`examples/${document.hash}`)).map(parseStoredExample).filter((example): example is StoredExample => example !== undefined);
        let probes: Promise<Probe[]> | undefined;
        return writeCheckedModule({
          llm: this.#options.llm,
          system: ROUTINE_SYSTEM,
          prompt: this.#prompt(document, examples),
          kind: 'routine',
          maxAttempts: this.#options.maxAttempts ?? 3,
          typeChecker: this.book.typeChecker,
          sandbox: this.book.sandbox,
          label: `"${name}"`,
          usageLabel: name,
          logger: this.book.logger,
          ...(this.#options.onUsage ? { onUsage: this.#options.onUsage } : {}),
          // The reference answers do not depend on the module: asked once, on the first attempt that builds.
          check: async (module) => this.#check(module, document, examples, await (probes ??= this.#probes(document))),
        });
      },
    });
  }

  #prompt(document: ProtocolDocument, examples: readonly StoredExample[]): string {
    const json = prescribesJson(document);
    const lines = ['The protocol document:', '<protocol>', document.text.trim(), '</protocol>', ''];
    if (!json) lines.push("This protocol's bodies are text: use z.string() for the input and the output.", '');
    lines.push(describeTools(this.#options.tools()), '');
    if (examples.length) {
      lines.push("Recorded exchanges, answered by the agent's LLM (your routine must give the same replies):");
      examples.forEach((example, index) => {
        const where = example.conversationId ? `conversation ${example.conversationId.slice(0, 6)}, turn ${example.turn}` : 'single query';
        lines.push(`${index + 1}. ${where}: body ${JSON.stringify(example.body)} → reply ${JSON.stringify(example.reply)}`);
      });
    }
    return lines.join('\n');
  }

  /** Queries the LLM writes from the PD, with the LLM responder's answers (a failed one is left out). */
  async #probes(document: ProtocolDocument): Promise<Probe[]> {
    const count = this.#options.checkQueries ?? 3;
    if (count <= 0) return [];
    const json = prescribesJson(document);
    const onUsage = this.#options.onUsage ? (usage: LlmUsage & { model: string }) => this.#options.onUsage?.(usage, document.metadata.name) : undefined;
    let bodies: JsonValue[] = [];
    try {
      const prompt = [
        '<protocol>',
        document.text.trim(),
        '</protocol>',
        '',
        `Write ${count} different bodies a sender could send as the first query under this protocol: typical ones, and one edge case the protocol covers (such as one of its error replies).`,
        `Reply with only a JSON array of the ${count} bodies${json ? '' : ' (strings)'}.`,
      ].join('\n');
      const result = await converse(this.#options.llm, { system: QUERIES_SYSTEM, messages: [{ role: 'user', content: prompt }], maxSteps: 1, temperature: 0, ...(onUsage ? { onUsage } : {}) });
      const parsed = extractJson(result.text);
      const list = parsed.ok ? z.array(z.unknown()).safeParse(parsed.value) : undefined;
      if (list?.success) bodies = (list.data as JsonValue[]).slice(0, count);
      else this.book.logger.warn(`"${document.metadata.name}": the LLM wrote no usable test queries`);
    } catch (error) {
      this.book.logger.warn(`"${document.metadata.name}": no test queries: ${describeError(error)}`);
    }
    const tools = this.#options.tools();
    const profile = this.#options.profile?.() ?? { name: 'agent', description: '', protocols: [], tools };
    const probes: Probe[] = [];
    for (const body of bodies) {
      try {
        const reply = await answerUnderProtocol({ model: this.#options.llm, profile, ...(onUsage ? { onUsage } : {}) }, document, [], body);
        probes.push({ body, reply });
      } catch (error) {
        this.book.logger.warn(`"${document.metadata.name}": no reference answer for ${preview(body, 80)}: ${describeError(error)}`);
      }
    }
    return probes;
  }

  /** Runs a candidate on the recorded exchanges (by value when deterministic) and on the probes (by shape). */
  async #check(module: SandboxedModule, document: ProtocolDocument, examples: readonly StoredExample[], probes: readonly Probe[]): Promise<{ errors: string[]; passed: string[] }> {
    const json = prescribesJson(document);
    const tools = toolbox(this.#options.tools());
    const errors: string[] = [];
    let byValue = 0;
    let byShape = 0;
    const run = async (body: JsonValue, turn: number, id: string | null, state: JsonObject): Promise<{ reply: JsonValue; state: JsonObject }> => {
      const result = await module.run('handle', body, {
        conversation: { id, turn, state: structuredClone(state) },
        protocol: { name: document.metadata.name, hash: document.hash, metadata: document.metadata },
        tools,
        logger: silentLogger,
      });
      return { reply: answerOf(result, document), state: result.state ?? state };
    };
    const checkOutput = async (label: string, reply: JsonValue) => {
      const issues = (await module.run('checkOutput', reply)).value;
      if (typeof issues === 'string') errors.push(`${label}: the output schema refuses the expected reply ${preview(reply)}: ${issues}`);
    };

    const conversations = replayable(examples);
    for (const [index, turns] of conversations.entries()) {
      let state: JsonObject = {};
      for (const example of turns) {
        const label = turns.length > 1 ? `recorded conversation ${index + 1}, turn ${example.turn}` : `recorded example ${index + 1}`;
        const id = example.conversationId ? `check-${index + 1}` : null;
        let first: { reply: JsonValue; state: JsonObject };
        let second: { reply: JsonValue; state: JsonObject } | undefined;
        try {
          first = await run(example.body, example.turn, id, state);
          // Twice: a reply that changes between two runs comes from a clock or a live tool, compared by shape only.
          second = await run(example.body, example.turn, id, state).catch(() => undefined);
        } catch (error) {
          errors.push(`${label}: body ${preview(example.body)}: the routine failed: ${error instanceof Error ? error.message : String(error)}`);
          break;
        }
        const deterministic = second !== undefined && sameValue(first.reply, second.reply);
        if (json && deterministic) {
          if (!sameValue(first.reply, example.reply)) errors.push(`${label}: body ${preview(example.body)}: the routine replied ${preview(first.reply)} but the recorded reply is ${preview(example.reply)}`);
          else byValue++;
        } else {
          const mismatch = shapeMismatch(first.reply, example.reply, json);
          if (mismatch) errors.push(`${label}: body ${preview(example.body)}: ${mismatch}`);
          else byShape++;
        }
        if (json) await checkOutput(label, example.reply);
        state = first.state;
      }
    }
    let probed = 0;
    for (const [index, probe] of probes.entries()) {
      const label = `test query ${index + 1}`;
      try {
        const { reply } = await run(probe.body, 1, prescribesMultiround(document) ? `probe-${index + 1}` : null, {});
        const mismatch = shapeMismatch(reply, probe.reply, json);
        if (mismatch) errors.push(`${label}: body ${preview(probe.body)}: ${mismatch} (the LLM's answer)`);
        else probed++;
        if (json) await checkOutput(label, probe.reply);
      } catch (error) {
        errors.push(`${label}: body ${preview(probe.body)}: the routine failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    const recorded = byValue + byShape;
    if (!errors.length && recorded + probed === 0) errors.push('nothing to check the routine on: no recorded exchange and no test query');
    const passed: string[] = [];
    if (recorded) passed.push(`${recorded} recorded turn(s) (${byValue} by value, ${byShape} by shape)`);
    if (probed) passed.push(`${probed} test query(ies) written by the LLM (shape vs the LLM's answer)`);
    return { errors, passed };
  }

  /** Writes batched counters and stops the workers (a generation under way is abandoned, and retried later). */
  override async close(): Promise<void> {
    await super.close();
    this.#runners.clear();
  }
}

function prescribesMultiround(document: ProtocolDocument): boolean {
  return document.metadata.multiround === true;
}

/** The reply of a sandboxed `handle`: its value, or the PD's invalid-input reply when the input schema refused the body. */
function answerOf(result: SandboxResult, document: ProtocolDocument): JsonValue {
  if (!result.invalid) return result.value;
  const reply = result.invalid.reply ?? protocolInvalidInputReply(document);
  // No prescribed error reply: let the LLM judge a body the generated schema refuses (the schema is a guess).
  if (reply === undefined) throw new Error(`the routine's input schema refuses the body: ${result.invalid.issues}`);
  return reply;
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Why two replies differ in shape (JSON type and top-level keys), or undefined when they agree. */
function shapeMismatch(routine: JsonValue, expected: JsonValue, json: boolean): string | undefined {
  if (!json) return typeof routine === 'string' ? undefined : `the routine replied a ${jsonType(routine)}, the protocol's bodies are text`;
  const [a, b] = [jsonType(routine), jsonType(expected)];
  if (a !== b) return `the routine replied a ${a} ${preview(routine)} where a ${b} like ${preview(expected)} was expected`;
  if (a === 'object') {
    const keysA = Object.keys(routine as JsonObject).sort();
    const keysB = Object.keys(expected as JsonObject).sort();
    if (keysA.join('\u0000') !== keysB.join('\u0000')) return `the routine replied ${preview(routine)}, with keys [${keysA.join(', ')}], where [${keysB.join(', ')}] were expected, as in ${preview(expected)}`;
  }
  return undefined;
}

function toolbox(tools: readonly Tool[]): Record<string, (input: unknown) => Promise<unknown>> {
  return Object.fromEntries(tools.map((tool) => [tool.name, (input: unknown) => callTool(tool, input)]));
}
