// What the examples share and would only distract from the framework: which LLM to use, temporary copies of
// agent folders, the assistant (a Sender whose tasks get routines) and what each side's LLM has cost.
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  AnthropicModel,
  FileMemory,
  hasAnthropicKey,
  Sender,
  type LanguageModel,
  type Logger,
  type RunningAgent,
} from 'agora-agents';
import { listGeneratedRoutines, TaskRoutineStore, type RoutineTypeChecker } from 'agora-agents/generation';
import type { SenderThresholds, TaskServedEvent } from 'agora-agents';
import { FakeAnthropic } from 'agora-agents/testing';
import { brain } from './weather/brain.js';

/** The LLM the examples run on: Claude when ANTHROPIC_API_KEY is set, else the fake brain on loopback. */
export type ExampleLlm = { llm: LanguageModel; name: string; offline: boolean; close(): Promise<void> };

/** Claude with a key in the environment; otherwise a FakeAnthropic running the deterministic brain (tokens ≈ characters / 4). */
export async function exampleLlm(): Promise<ExampleLlm> {
  if (hasAnthropicKey(process.env)) {
    const llm = new AnthropicModel();
    return { llm, name: `Claude (${llm.model})`, offline: false, close: async () => {} };
  }
  const fake = await FakeAnthropic.start({ fallback: brain, tokenModel: 'chars' });
  const llm = new AnthropicModel({ baseURL: fake.url, apiKey: 'fake', maxRetries: 0, model: 'fake-brain' });
  return {
    llm,
    name: 'the fake brain of examples/weather/brain.ts (set ANTHROPIC_API_KEY to use Claude)',
    offline: true,
    close: () => fake.close(),
  };
}

/** Warnings and errors on stderr; the framework's progress lines stay quiet. */
export const quietLogger: Logger = {
  info() {},
  warn: (message) => console.error(`warn: ${message}`),
  error: (message) => console.error(`error: ${message}`),
};

/** How long an operation runs before its progress is shown, and between two progress lines. */
const PROGRESS_EVERY_MS = 2000;

/**
 * A logger for the examples' agents: warnings and errors on stderr; the framework's info lines (routine writing,
 * negotiation, checks, approvals) kept, not printed, until an operation wrapped in `during` runs longer than 2 s:
 * then, every 2 s, one line on stderr says how long it has run and the framework's latest step.
 */
export function progressLogger(): Logger & { during<T>(label: string, work: () => Promise<T>): Promise<T> } {
  let latest: string | undefined;
  return {
    ...quietLogger,
    info(message) {
      latest = message;
    },
    async during(label, work) {
      const started = Date.now();
      latest = undefined;
      const timer = setInterval(() => {
        const seconds = Math.round((Date.now() - started) / 1000);
        console.error(`  … ${label}: ${seconds} s${latest ? `, ${latest}` : ''}`);
      }, PROGRESS_EVERY_MS);
      try {
        return await work();
      } finally {
        clearInterval(timer);
      }
    },
  };
}

/** A temporary folder holding copies of files and folders of `examples/` (`target → source`), removed by `remove`. */
export async function temporaryCopy(
  prefix: string,
  copies: Record<string, string> = {},
): Promise<{ dir: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const examples = fileURLToPath(new URL('.', import.meta.url));
  for (const [target, source] of Object.entries(copies))
    await cp(join(examples, source), join(dir, target), { recursive: true });
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** What LLMs cost so far: calls and tokens (input + output). */
export type Cost = { calls: number; tokens: number };

/** A service agent's cost, as its metrics count it (answers, judgements, negotiation, routine writing). */
export function agentCost(agent: RunningAgent): Cost {
  const snapshot = agent.receiver.counters.snapshot();
  return { calls: snapshot.llmCalls, tokens: snapshot.inputTokens + snapshot.outputTokens };
}

/** Names of the protocols whose LLM-written routine a service agent has approved. */
export async function approvedRoutines(agent: RunningAgent): Promise<string[]> {
  return (await listGeneratedRoutines(agent.receiver.memory))
    .filter((entry) => entry.status === 'approved')
    .map((entry) => entry.protocol);
}

/** The queries a service agent answered with a routine so far. */
export function routineAnswers(agent: RunningAgent): number {
  return agent.receiver.counters.snapshot().queries.routine;
}

export function minus(after: Cost, before: Cost): Cost {
  return { calls: after.calls - before.calls, tokens: after.tokens - before.tokens };
}

/** A user agent: a Sender whose tasks get LLM-written routines (approved automatically), and its cost. */
export type Assistant = {
  sender: Sender;
  cost(): Cost;
  /** The last task call it made. */
  readonly last: TaskServedEvent | undefined;
  /** Waits for the routine writing started so far. */
  idle(): Promise<void>;
  /** Names of the tasks whose routine is approved. */
  approved(): Promise<string[]>;
  close(): Promise<void>;
};

/** Starts a user agent in `dir`: tasks go from natural language to a protocol, then to a routine after `threshold` LLM-made calls. */
export async function startAssistant(options: {
  dir: string;
  llm: LanguageModel;
  logger: Logger;
  threshold?: number;
  thresholds?: SenderThresholds;
  hub?: string;
  /** Shared by the agents of one process, so each does not start (and warm) its own compiler. */
  typeChecker?: RoutineTypeChecker;
}): Promise<Assistant> {
  await mkdir(options.dir, { recursive: true });
  const memory = new FileMemory(join(options.dir, '.agora'));
  const cost: Cost = { calls: 0, tokens: 0 };
  const count = (usage: { inputTokens: number; outputTokens: number }) => {
    cost.calls += 1;
    cost.tokens += usage.inputTokens + usage.outputTokens;
  };
  // autoApprove: the examples run unattended; an owner would review with `agora routines` instead.
  const routines = new TaskRoutineStore({
    dir: options.dir,
    memory,
    llm: options.llm,
    logger: options.logger,
    threshold: options.threshold ?? 5,
    autoApprove: true,
    onUsage: count,
    ...(options.typeChecker ? { typeChecker: options.typeChecker } : {}),
  });
  let last: TaskServedEvent | undefined;
  const sender = new Sender({
    llm: options.llm,
    dir: options.dir,
    memory,
    logger: options.logger,
    onUsage: count,
    ...(options.thresholds ? { thresholds: options.thresholds } : {}),
    // A hub is asked for a fitting protocol before negotiating, and receives what is negotiated.
    hub: options.hub ?? null,
    extensions: {
      taskRoutine: (task, document) => routines.taskRoutine(task, document),
      served: (event) => {
        last = event;
        return routines.served(event);
      },
    },
  });
  return {
    sender,
    cost: () => ({ ...cost }),
    get last() {
      return last;
    },
    idle: () => routines.idle(),
    approved: async () =>
      (await listGeneratedRoutines(memory))
        .filter((entry) => entry.status === 'approved')
        .map((entry) => entry.task ?? entry.protocol),
    close: async () => {
      await routines.close();
      await sender.close();
    },
  };
}

/** How a task call was served: natural language, a protocol with LLMs, or routines on both sides (no LLM call). */
export function pathOf(event: TaskServedEvent | undefined, receiverRoutine: boolean): string {
  if (!event?.hash) return 'NL';
  const sender = event.llmCalls === 0;
  if (sender && receiverRoutine) return 'routines';
  if (!sender && !receiverRoutine) return 'PD+LLM';
  return `PD+LLM (${sender ? 'sender' : 'receiver'} routine)`;
}

/** A line of left-aligned columns. */
export function columns(cells: (string | number)[], widths: number[]): string {
  return cells
    .map((cell, index) => String(cell).padEnd(widths[index] ?? 0))
    .join('  ')
    .trimEnd();
}
