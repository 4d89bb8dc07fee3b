// Opt-in protection of the event loop from hand-written routines (`--isolate-routines`, AGORA_ISOLATE_ROUTINES):
// the synchronous part of a call runs under node:vm's `timeout`, which interrupts synchronous code (a watchdog
// thread terminates the execution), so an endless loop becomes a failed call instead of a frozen agent.
//
// The routine itself stays in the main realm: the vm context is only the entry point that calls it, so its zod
// schemas, `instanceof` and prototypes are the ones it was written against. What it does not cover: code after an
// `await` (it runs from the microtask queue, outside the vm call) and memory (the routine shares the agent's heap).
// Not the default: the watchdog thread costs ~65 µs per call, more than the whole hot path (bench/isolate.ts).
// Wired through runRoutine's `isolation` (./run.ts): the routine's `handle` call and each step of a streaming
// routine (each `next()` of its generator) run under the limit.
import { createContext, Script } from 'node:vm';

/**
 * The longest synchronous stretch an isolated routine may run, in ms (or its time limit, when shorter): the event
 * loop is the agent's, and every client waits while a routine holds it, so it is bounded well under a second.
 */
export const ISOLATED_SYNC_LIMIT_MS = 500;

/** Whether the environment asks for isolated routines (`AGORA_ISOLATE_ROUTINES=1` or `true`). */
export function isolateRoutinesFromEnv(env: NodeJS.ProcessEnv): boolean {
  return /^(1|true|yes)$/i.test(env.AGORA_ISOLATE_ROUTINES ?? '');
}

/** Runs synchronous work with a time limit on the synchronous part; one per receiver (the vm context is reused). */
export class SyncTimeLimit {
  readonly #context = createContext({ __agora_call: undefined as (() => void) | undefined });
  readonly #script = new Script('__agora_call()', { filename: 'agora-routine-isolate.js' });

  /**
   * Calls `work` and returns its result; throws "ran synchronously for longer than N ms" when its synchronous part
   * passes `timeoutMs` (a returned promise settles outside the limit).
   */
  run<T>(work: () => T, timeoutMs: number): T {
    let result: { value: T } | undefined;
    (this.#context as { __agora_call: () => void }).__agora_call = () => {
      result = { value: work() };
    };
    try {
      this.#script.runInContext(this.#context, { timeout: Math.max(1, Math.floor(timeoutMs)) });
    } catch (error) {
      if ((error as { code?: string }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT')
        throw new Error(`ran synchronously for longer than ${timeoutMs} ms`, { cause: error });
      throw error;
    } finally {
      (this.#context as { __agora_call: unknown }).__agora_call = undefined;
    }
    if (!result) throw new Error('the routine did not return');
    return result.value;
  }
}
