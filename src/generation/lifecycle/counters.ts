// Counters of a protocol's (or task's) routine, batched so a routine-served query costs no memory write.
import { describeError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { AgentMemory } from '../../memory/file.js';
import type { CounterField } from './records.js';

/** How long batched counters wait before they are written. */
const COUNTER_FLUSH_MS = 1000;

/** Counters under `<prefix>/counters/<field>`, added to in memory and written at most once a second. */
export class CounterBatch {
  readonly #memory: AgentMemory;
  readonly #logger: Logger;
  readonly #pending = new Map<string, number>();
  #flushTimer: NodeJS.Timeout | undefined;

  constructor(memory: AgentMemory, logger: Logger) {
    this.#memory = memory;
    this.#logger = logger;
  }

  /** Adds to a counter later (batched). */
  count(prefix: string, field: CounterField, by = 1): void {
    const key = `${prefix}/counters/${field}`;
    this.#pending.set(key, (this.#pending.get(key) ?? 0) + by);
    if (!this.#flushTimer) {
      this.#flushTimer = setTimeout(
        () =>
          void this.flush().catch((error: unknown) =>
            this.#logger.error(`routine counters not saved: ${describeError(error)}`),
          ),
        COUNTER_FLUSH_MS,
      );
      this.#flushTimer.unref();
    }
  }

  /** Adds to a counter now, with what was batched for it, and returns its value. */
  async countNow(prefix: string, field: CounterField, by = 1): Promise<number> {
    const key = `${prefix}/counters/${field}`;
    const pending = this.#pending.get(key) ?? 0;
    this.#pending.delete(key);
    return this.#memory.increment(key, by + pending);
  }

  /** Writes the batched counters. */
  async flush(): Promise<void> {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    const entries = [...this.#pending];
    this.#pending.clear();
    await Promise.all(entries.map(([key, by]) => this.#memory.increment(key, by)));
  }
}
