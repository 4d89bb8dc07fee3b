// The bookkeeping both sides share (RoutineGenerator, TaskRoutineStore): the modules of approved routines, their
// failures, examples and background work; counters (./counters.ts), statuses (./status-cache.ts) and the life of a
// generation (./lifecycle.ts) live beside it.
import { resolve } from 'node:path';
import { AgoraError, describeError } from '../../errors.js';
import { silentLogger, type Logger } from '../../log.js';
import { KeyedQueue } from '../../_queue.js';
import type { AgentMemory } from '../../memory/file.js';
import type { JsonObject } from '../../schemas.js';
import { CounterBatch } from './counters.js';
import { writeGeneration, type Generation } from './lifecycle.js';
import type { QuickJSSandbox, SandboxOptions } from '../sandbox/quickjs.js';
import { RoutineSandboxes } from './_sandboxes.js';
import type { CounterField, RoutineStatus } from './records.js';
import { RoutineTypeChecker } from '../checks/typecheck.js';
import { StatusCache, type StatusEntry } from './status-cache.js';

/** The options both sides share, as RoutineGeneratorOptions documents them. */
export type RoutineBookOptions = {
  dir: string;
  memory: AgentMemory;
  logger?: Logger;
  threshold?: number;
  autoApprove?: boolean;
  timeoutMs?: number;
  memoryLimitMb?: number;
  maxFailures?: number;
  typeChecker?: RoutineTypeChecker;
  now?: () => number;
  /** Told after each status this process writes (written, approved, failed, disabled): the dashboard's cue. */
  onStatus?: (status: RoutineStatus) => void;
};

/** A `generating` status older than this was left by a process that died mid-generation. */
const STALE_GENERATION_MS = 15 * 60_000;
/** Exchanges kept per protocol (or task) as examples. */
export const EXAMPLE_CAP = 20;

/** The state one RoutineGenerator or TaskRoutineStore keeps about its routines, in memory and in this process. */
export class RoutineBook {
  readonly logger: Logger;
  readonly now: () => number;
  /** The limits of a routine's QuickJS sandbox, for checks and runs alike. */
  readonly sandbox: SandboxOptions;
  readonly typeChecker: RoutineTypeChecker;
  readonly #ownsTypeChecker: boolean;
  readonly #options: RoutineBookOptions;
  readonly #dir: string;
  readonly #maxFailures: number;
  readonly #counters: CounterBatch;
  readonly #statuses: StatusCache;
  readonly #sandboxes: RoutineSandboxes;
  readonly #consecutive = new Map<string, number>();
  readonly #inflight = new Set<Promise<unknown>>();
  readonly #remembered = new Set<string>();
  readonly #exampleWrites = new KeyedQueue();
  readonly #generating = new Map<string, Promise<RoutineStatus>>();
  // The writer claims this process holds (see #claim), by prefix.
  readonly #claims = new Map<string, string>();
  #closed = false;

  constructor(options: RoutineBookOptions) {
    this.#options = options;
    this.#dir = resolve(options.dir);
    this.logger = options.logger ?? silentLogger;
    this.now = options.now ?? Date.now;
    this.#maxFailures = options.maxFailures ?? 3;
    this.sandbox = { timeoutMs: options.timeoutMs ?? 2000, memoryLimitMb: options.memoryLimitMb ?? 64 };
    this.#ownsTypeChecker = !options.typeChecker;
    this.typeChecker = options.typeChecker ?? new RoutineTypeChecker();
    this.#counters = new CounterBatch(options.memory, this.logger);
    this.#statuses = new StatusCache(options.memory, this.#dir, this.now, options.onStatus);
    this.#sandboxes = new RoutineSandboxes(this.#dir, this.sandbox);
  }

  get memory(): AgentMemory {
    return this.#options.memory;
  }

  /** Forgets cached statuses: the next query reads memory again. */
  forgetStatuses(): void {
    this.#statuses.clear();
  }

  /** The clock's time as an ISO string. */
  timestamp(): string {
    return new Date(this.now()).toISOString();
  }

  /** Adds to a counter later (batched: a routine-served query costs no memory write). */
  count(prefix: string, field: CounterField, by = 1): void {
    this.#counters.count(prefix, field, by);
  }

  /** Writes the batched counters. */
  flush(): Promise<void> {
    return this.#counters.flush();
  }

  // The last status each routine was seen in by this process, to log a review once.
  readonly #seenStatus = new Map<string, string>();

  /** Whether {@link remember} was called for a prefix in this process. */
  remembers(prefix: string): boolean {
    return this.#remembered.has(prefix);
  }

  /** Writes what the CLI needs to name a protocol or task that has counters but no routine yet, once per process. */
  async remember(
    prefix: string,
    meta: { kind: 'protocol' | 'task'; protocol: string; hash: string; task?: string },
  ): Promise<void> {
    if (this.#remembered.has(prefix)) return;
    this.#remembered.add(prefix);
    await this.memory.set(`${prefix}/meta`, meta);
  }

  /** Whether an approved routine with its file exists for a prefix (cached as above; no promise while fresh). */
  approved(prefix: string): boolean | Promise<boolean> {
    const fresh = this.#statuses.fresh(prefix);
    if (fresh) return this.#usable(prefix, fresh);
    return this.#statuses.entry(prefix).then((entry) => this.#usable(prefix, entry));
  }

  #usable(prefix: string, entry: StatusEntry): boolean {
    const status = entry.status?.status;
    // A review happens in another process (`agora routines`, the dashboard): the running agent says when it sees it.
    if (status !== undefined && this.#seenStatus.get(prefix) !== status) {
      if (status === 'approved' || status === 'rejected')
        this.logger.info(
          `${entry.status?.protocol ? `"${entry.status.protocol}"` : prefix}: routine ${status}${entry.status?.reviewedAt ? ` at ${entry.status.reviewedAt}` : ''}: ${status === 'approved' ? 'it answers from now on, without the LLM' : 'the LLM keeps serving it'}`,
        );
      this.#seenStatus.set(prefix, status);
    }
    const usable = status === 'approved' && entry.stamp !== undefined;
    if (!usable) this.#sandboxes.retire(prefix);
    return usable;
  }

  /**
   * Calls the approved routine's sandbox and records the outcome: a success resets the failures in a row, a failure
   * counts (disabling the routine after `maxFailures` in a row) and becomes AgoraError('ROUTINE_FAILED').
   */
  run<T>(prefix: string, label: string, use: (module: QuickJSSandbox) => Promise<T>): Promise<T> {
    // A sandbox at hand is used without an await of its own; a success with no failures to reset adds none either.
    const fresh = this.#statuses.fresh(prefix);
    const ready = fresh && this.#sandboxes.ready(prefix, fresh);
    let work: Promise<T>;
    try {
      work = ready
        ? use(ready)
        : this.#statuses.entry(prefix).then(async (entry) => {
            const module = await this.#sandboxes.module(prefix, entry);
            if (!module) throw new Error('the routine is no longer approved');
            return use(module);
          });
    } catch (error) {
      work = Promise.reject(error);
    }
    return work
      .then((value) => (this.#consecutive.get(prefix) === 0 ? value : this.#succeeded(prefix).then(() => value)))
      .catch((error: unknown) => this.#afterFailure(prefix, label, error));
  }

  async #afterFailure(prefix: string, label: string, error: unknown): Promise<never> {
    // The peer reads "Routine failed"; the operator reads why, with the routine's own stack (its file and line).
    const stack = error instanceof Error && error.stack ? `\n${error.stack.split('\n').slice(0, 8).join('\n')}` : '';
    this.logger.warn(`${label}: routine failed: ${describeError(error)}${stack}`);
    await this.#failed(prefix, label, error).catch((failure: unknown) =>
      this.logger.error(`${label}: routine failure not recorded: ${describeError(failure)}`),
    );
    throw new AgoraError('ROUTINE_FAILED', 'Routine failed', { cause: error });
  }

  /** Records a failed run: counts it, and disables the routine after `maxFailures` in a row. */
  async #failed(prefix: string, label: string, error: unknown): Promise<void> {
    this.count(prefix, 'failures');
    const consecutive = await this.memory.increment(`${prefix}/consecutive-failures`);
    this.#consecutive.set(prefix, consecutive);
    if (consecutive < this.#maxFailures) return;
    const status = await this.#statuses.read(prefix);
    if (status?.status === 'approved') {
      const reason = `${consecutive} failures in a row, the last: ${describeError(error)}`;
      await this.#statuses.write(prefix, { ...status, status: 'disabled', reason, updatedAt: this.timestamp() });
      this.logger.error(
        `${label}: generated routine disabled after ${reason}; the LLM serves it again (agora routines approve re-enables it)`,
      );
    }
    this.#sandboxes.retire(prefix);
  }

  /** Records a successful run: resets the failures in a row (one write, and only when it was not already 0). */
  async #succeeded(prefix: string): Promise<void> {
    this.#consecutive.set(prefix, 0);
    await this.memory.set(`${prefix}/consecutive-failures`, 0);
  }

  /** Keeps an exchange as an example (the last {@link EXAMPLE_CAP}). */
  addExample(key: string, example: JsonObject): Promise<void> {
    // Served hooks overlap (the receiver does not await them): serialize the read-modify-write per key.
    return this.#exampleWrites.run(key, async () => {
      const current = await this.memory.get(key);
      const list = Array.isArray(current) ? current : [];
      await this.memory.set(key, [...list, example].slice(-EXAMPLE_CAP));
    });
  }

  /** The examples kept under a key, objects only. */
  async examples(key: string): Promise<JsonObject[]> {
    const current = await this.memory.get(key);
    return Array.isArray(current)
      ? current.filter((item): item is JsonObject => !!item && typeof item === 'object' && !Array.isArray(item))
      : [];
  }

  /**
   * Counts an LLM-served use now and says whether a routine is due: the threshold is reached, none is under way,
   * and none was written (or a `generating` status was left by a dead process).
   */
  async due(prefix: string): Promise<boolean> {
    const llm = await this.#counters.countNow(prefix, 'llm');
    const threshold = this.#options.threshold ?? 5;
    if (threshold <= 0 || llm < threshold || this.#generating.has(prefix)) return false;
    const status = await this.#statuses.read(prefix);
    if (status && !(status.status === 'generating' && this.now() - Date.parse(status.updatedAt) > STALE_GENERATION_MS))
      return false;
    return this.#claim(prefix);
  }

  /**
   * Claims the writing of a prefix's routine among the processes sharing the memory (workers on Redis): the first to
   * count its claim writes, the others do not. A claim is let go when its writing ends; one left by a process that
   * died ends with its window (the stale-generation period).
   */
  async #claim(prefix: string): Promise<boolean> {
    const key = `${prefix}/writer/${Math.floor(this.now() / STALE_GENERATION_MS)}`;
    if ((await this.memory.increment(key)) !== 1) return false;
    this.#claims.set(prefix, key);
    return true;
  }

  /** Writes and records a routine, unless one is under way for the prefix: then resolves with that one's outcome. */
  generate(generation: Generation): Promise<RoutineStatus> {
    const { prefix } = generation;
    const running = this.#generating.get(prefix);
    if (running) return running;
    const work = writeGeneration(generation, {
      dir: this.#dir,
      statuses: this.#statuses,
      logger: this.logger,
      autoApprove: this.#options.autoApprove === true,
      timestamp: () => this.timestamp(),
      closed: () => this.#closed,
    }).finally(() => {
      this.#generating.delete(prefix);
      const claim = this.#claims.get(prefix);
      this.#claims.delete(prefix);
      if (claim) void this.memory.delete(claim).catch(() => undefined);
    });
    this.#generating.set(prefix, work);
    return this.track(work);
  }

  /** Tracks background work so `idle()` can wait for it. */
  track<T>(work: Promise<T>): Promise<T> {
    this.#inflight.add(work);
    const done = () => void this.#inflight.delete(work);
    work.then(done, done);
    return work;
  }

  /** Resolves once the background work tracked so far, and any it started, is done. */
  async idle(): Promise<void> {
    // The receiver schedules `served` in a microtask after the reply: let it start first.
    await new Promise((done) => setImmediate(done));
    while (this.#inflight.size) {
      await Promise.allSettled([...this.#inflight]);
      await new Promise((done) => setImmediate(done));
    }
  }

  /** Writes batched counters, drops the sandboxes and an owned type checker; a generation under way is abandoned. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.flush();
    this.#sandboxes.retireAll();
    this.#statuses.clear();
    if (this.#ownsTypeChecker) await this.typeChecker.close();
  }
}

/** What RoutineGenerator and TaskRoutineStore share: a book, and their `idle`, `flush` and `close` handed to it. */
export abstract class RoutineKeeper {
  protected readonly book: RoutineBook;

  constructor(options: RoutineBookOptions) {
    this.book = new RoutineBook(options);
  }

  /** Resolves once counting, example keeping and routine writing started so far are done (tests, shutdown). */
  idle(): Promise<void> {
    return this.book.idle();
  }

  /** Writes batched counters. */
  flush(): Promise<void> {
    return this.book.flush();
  }

  /** Writes batched counters and drops the sandboxes (a generation under way is abandoned, and retried later). */
  async close(): Promise<void> {
    await this.book.close();
  }

  /** Forgets cached statuses, so a review made in this process (the dashboard) takes effect on the next query. */
  forgetStatuses(): void {
    this.book.forgetStatuses();
  }
}
