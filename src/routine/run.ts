import { z } from 'zod';
import { AgoraError, describeError } from '../errors.js';
import type { ProtocolDocument } from '../protocol/document.js';
import type { JsonValue } from '../schemas.js';
import type { Routine, RoutineContext } from './define.js';
import type { SyncTimeLimit } from './isolate.js';

/** Opt-in isolation of a routine's synchronous stretches (`--isolate-routines`): the limit, and its length in ms. */
export type RoutineIsolation = { limit: SyncTimeLimit; syncMs: number };

/**
 * The PD's own error reply for a malformed body, when its text prescribes one
 * (e.g. `{"error": "Invalid format"}`): the first such reply whose text says "invalid", else none.
 */
export function protocolInvalidInputReply(document: ProtocolDocument): JsonValue | undefined {
  const explicit = document.metadata.invalidInput ?? document.metadata.invalid_input;
  if (explicit !== undefined) return explicit as JsonValue;
  const pattern = /\{\s*"(error|message)"\s*:\s*"([^"\\]{1,200})"\s*\}/g;
  for (const match of document.content.matchAll(pattern)) {
    if (/invalid|malformed|bad (request|input|format)/i.test(match[2]!)) return { [match[1]!]: match[2]! };
  }
  return undefined;
}

function isPlainJson(value: unknown, depth: number): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object' || depth > 64) return false;
  if (Array.isArray(value)) {
    for (const item of value) if (!isPlainJson(item, depth + 1)) return false;
    return true;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  for (const key in value) if (!isPlainJson((value as Record<string, unknown>)[key], depth + 1)) return false;
  return true;
}

/**
 * Converts a routine's reply to a JSON value, refusing what JSON cannot carry. Plain data (the usual reply) is
 * checked in place; anything else (a Date, a class with toJSON, undefined members) goes through JSON.
 */
function toJson(value: unknown): JsonValue {
  if (value === undefined) return null;
  if (isPlainJson(value, 0)) return value as JsonValue;
  const text = JSON.stringify(value);
  if (text === undefined) throw new Error('the reply is not JSON-serializable');
  return JSON.parse(text) as JsonValue;
}

// Deadlines share timers, 25 ms apart: one setTimeout per query costs more than the routine itself in profiles,
// and a time limit of seconds does not need millisecond precision.
const DEADLINE_STEP_MS = 25;
const deadlines = new Map<number, Set<() => void>>();

function onDeadline(delayMs: number, fire: () => void): () => void {
  const due = Math.ceil((Date.now() + delayMs) / DEADLINE_STEP_MS) * DEADLINE_STEP_MS;
  let dueSet = deadlines.get(due);
  if (!dueSet) {
    const set = new Set<() => void>();
    dueSet = set;
    deadlines.set(due, set);
    setTimeout(() => {
      deadlines.delete(due);
      for (const callback of set) callback();
    }, due - Date.now()).unref();
  }
  const set = dueSet;
  set.add(fire);
  return () => void set.delete(fire);
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as PromiseLike<unknown>).then === 'function';
}

function isAsyncGenerator(value: unknown): value is AsyncGenerator<unknown, unknown, void> {
  return typeof value === 'object' && value !== null && typeof (value as AsyncGenerator)[Symbol.asyncIterator] === 'function' && typeof (value as AsyncGenerator).next === 'function';
}

/** Runs a streaming routine to its end: each yield is a delta (dropped when nobody streams), the return value the reply. */
async function drain(generator: AsyncGenerator<unknown, unknown, void>, onDelta: ((delta: JsonValue) => void) | undefined, isolation: RoutineIsolation | undefined): Promise<unknown> {
  for (;;) {
    // Each step runs the generator's body synchronously up to its next await or yield: isolated, that stretch is bounded.
    const step = await (isolation ? isolation.limit.run(() => generator.next(), isolation.syncMs) : generator.next());
    if (step.done) return step.value;
    if (onDelta) onDelta(toJson(step.value));
  }
}

// The signal is made only if the routine reads it: most never do, and an AbortController per query shows in profiles.
class RunContext {
  readonly conversation: RoutineContext['conversation'];
  readonly protocol: RoutineContext['protocol'];
  readonly logger: RoutineContext['logger'];
  readonly tools: RoutineContext['tools'];
  #controller: AbortController | undefined;
  constructor(base: Omit<RoutineContext, 'signal'>) {
    this.conversation = base.conversation;
    this.protocol = base.protocol;
    this.logger = base.logger;
    this.tools = base.tools;
  }
  get signal(): AbortSignal {
    return (this.#controller ??= new AbortController()).signal;
  }
  abort(reason: Error): void {
    this.#controller?.abort(reason);
  }
}

/**
 * Runs a routine on a body with its schemas and a time limit. Throws AgoraError('ROUTINE_FAILED') when it
 * throws, times out or returns what its output schema refuses (details are in `cause` for the log), and
 * AgoraError('BAD_REQUEST') when the body fails its input schema and the PD prescribes no error reply. A routine
 * that is an async generator has its yields handed to `onDelta` (as JSON) and its return value is the reply.
 * With `isolation`, the synchronous stretches of the routine are interrupted past `syncMs` (a failed call).
 */
export async function runRoutine(
  routine: Routine,
  body: JsonValue,
  context: Omit<RoutineContext, 'signal'>,
  document: ProtocolDocument,
  timeoutMs: number,
  onDelta?: (delta: JsonValue) => void,
  isolation?: RoutineIsolation,
): Promise<JsonValue> {
  const runContext = new RunContext(context);
  let cancel: (() => void) | undefined;
  try {
    let input: unknown = body;
    if (routine.input) {
      const parsed = routine.input.safeParse(body);
      if (!parsed.success) {
        // Inside the try: an invalidInput reply that JSON cannot carry fails as the routine's own fault.
        const reply = routine.invalidInput !== undefined ? toJson(routine.invalidInput) : protocolInvalidInputReply(document);
        if (reply !== undefined) return reply;
        throw new AgoraError('BAD_REQUEST', `body does not follow the protocol "${document.metadata.name}": ${z.prettifyError(parsed.error)}`);
      }
      input = parsed.data;
    }
    const call = (value: unknown) => routine.handle(value, runContext as unknown as RoutineContext);
    let output: unknown = isolation ? isolation.limit.run(() => call(input), isolation.syncMs) : call(input);
    const generator = isAsyncGenerator(output) ? output : undefined;
    if (generator) output = drain(generator, onDelta, isolation);
    // A synchronous reply needs no timer (a synchronous loop could not be stopped by one anyway).
    if (isPromiseLike(output)) {
      const pending = output;
      // One promise settled by whichever comes first (Promise.race would make two more per query).
      output = await new Promise<unknown>((resolve, reject) => {
        cancel = onDeadline(timeoutMs, () => {
          const error = new Error(`timed out after ${timeoutMs} ms`);
          runContext.abort(error);
          // A generator is stopped at its next yield rather than left running for nobody.
          generator?.return(undefined).catch(() => undefined);
          reject(error);
        });
        pending.then(resolve, reject);
      });
    }
    if (routine.output) {
      const parsed = routine.output.safeParse(output);
      if (!parsed.success) throw new Error(`the reply does not match the routine's output schema: ${z.prettifyError(parsed.error)}`);
      return toJson(parsed.data);
    }
    return toJson(output);
  } catch (error) {
    // A bad argument from the routine's own code (memory key, tool input) is the routine's failure, like any bug.
    if (error instanceof AgoraError && error.code !== 'ROUTINE_FAILED' && error.code !== 'INVALID_ARGUMENT') throw error;
    // The routine's own error is the cause, as thrown (wrapping it would log `Error: Error: boom`); a thrown non-Error becomes one.
    throw new AgoraError('ROUTINE_FAILED', 'Routine failed', { cause: error instanceof Error ? error : new Error(`threw ${describeError(error)}`) });
  } finally {
    cancel?.();
  }
}
