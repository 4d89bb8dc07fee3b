import { z } from 'zod';
import { AgoraError, describeError } from '../errors.js';
import type { ProtocolDocument } from '../protocol/document.js';
import type { JsonValue } from '../schemas.js';
import type { Routine, RoutineContext } from './define.js';
import type { RoutineDeadlines } from './deadlines.js';
import type { SyncTimeLimit } from './isolate.js';

/** Opt-in isolation of a routine's synchronous stretches (`--isolate-routines`): the limit, and its length in ms. */
export type RoutineIsolation = { limit: SyncTimeLimit; syncMs: number };

/** What bounds a routine's run: its time limit, the deadlines it is timed on, and the opt-in isolation. */
export type RoutineLimits = {
  timeoutMs: number;
  deadlines: RoutineDeadlines;
  isolation?: RoutineIsolation | undefined;
};

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

/** Whether a value is a thenable, as promise resolution reads one: an object or a function with a callable `then`. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

function isAsyncGenerator(value: unknown): value is AsyncGenerator<unknown, unknown, void> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as AsyncGenerator)[Symbol.asyncIterator] === 'function' &&
    typeof (value as AsyncGenerator).next === 'function'
  );
}

/** Runs a streaming routine to its end: each yield is a delta (dropped when nobody streams), the return value the reply. */
async function drain(
  generator: AsyncGenerator<unknown, unknown, void>,
  onDelta: ((delta: JsonValue) => void) | undefined,
  isolation: RoutineIsolation | undefined,
): Promise<unknown> {
  for (;;) {
    // Each step runs the generator's body synchronously up to its next await or yield: isolated, that stretch is
    // bounded.
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
 * With `limits.isolation`, the synchronous stretches of the routine are interrupted past `syncMs` (a failed call).
 */
export function runRoutine(
  routine: Routine,
  body: JsonValue,
  context: Omit<RoutineContext, 'signal'>,
  document: ProtocolDocument,
  limits: RoutineLimits,
  onDelta?: (delta: JsonValue) => void,
  /** When the run began on `performance.now()`'s clock, when the caller read it already; the deadline counts from it. */
  started: number = performance.now(),
): Promise<JsonValue> {
  // Not an async function: each await of one costs V8 its suspended frame and two resume closures, and a query's
  // garbage is what slows a busy server down (0.6 KB less a query this way, measured). A promise is made only where
  // one is waited on.
  const runContext = new RunContext(context);
  const isolation = limits.isolation;
  let output: unknown;
  let generator: AsyncGenerator<unknown, unknown, void> | undefined;
  try {
    let input: unknown = body;
    if (routine.input) {
      const parsed = routine.input.safeParse(body);
      if (!parsed.success) return Promise.resolve(invalidInputReply(routine, document, parsed.error));
      input = parsed.data;
    }
    output = isolation
      ? isolation.limit.run(
          () => routine.handle(input as never, runContext as unknown as RoutineContext),
          isolation.syncMs,
        )
      : routine.handle(input as never, runContext as unknown as RoutineContext);
    if (isAsyncGenerator(output)) {
      generator = output;
      output = drain(generator, onDelta, isolation);
    }
    // A synchronous reply needs no timer (a synchronous loop could not be stopped by one anyway).
    if (!isThenable(output)) return Promise.resolve(checkedReply(routine, output));
  } catch (error) {
    return Promise.reject(routineFailure(error));
  }
  return withDeadline(output, routine, runContext, generator, started, limits);
}

/** The reply to a body its input schema refuses: the routine's or the PD's error reply, else BAD_REQUEST. */
function invalidInputReply(routine: Routine, document: ProtocolDocument, error: z.ZodError): JsonValue {
  // An invalidInput reply that JSON cannot carry fails as the routine's own fault (the caller's catch wraps it).
  const reply = routine.invalidInput !== undefined ? toJson(routine.invalidInput) : protocolInvalidInputReply(document);
  if (reply !== undefined) return reply;
  throw new AgoraError(
    'BAD_REQUEST',
    `body does not follow the protocol "${document.metadata.name}": ${z.prettifyError(error)}`,
  );
}

/** The routine's output checked by its output schema (if any) and made JSON. */
function checkedReply(routine: Routine, output: unknown): JsonValue {
  if (!routine.output) return toJson(output);
  const parsed = routine.output.safeParse(output);
  if (!parsed.success)
    throw new Error(`the reply does not match the routine's output schema: ${z.prettifyError(parsed.error)}`);
  return toJson(parsed.data);
}

/** What a run throws: our own errors as they are, anything else the routine did as ROUTINE_FAILED. */
function routineFailure(error: unknown): unknown {
  // A bad argument from the routine's own code (memory key, tool input) is the routine's failure, like any bug.
  if (error instanceof AgoraError && error.code !== 'ROUTINE_FAILED' && error.code !== 'INVALID_ARGUMENT') return error;
  // The routine's own error is the cause, as thrown (wrapping it would log `Error: Error: boom`); a thrown non-Error
  // becomes one.
  return new AgoraError('ROUTINE_FAILED', 'Routine failed', {
    cause: error instanceof Error ? error : new Error(`threw ${describeError(error)}`),
  });
}

/** An async reply, or the deadline's failure first: one promise settled by whichever comes first. */
function withDeadline(
  pending: PromiseLike<unknown>,
  routine: Routine,
  runContext: RunContext,
  generator: AsyncGenerator<unknown, unknown, void> | undefined,
  started: number,
  { timeoutMs, deadlines }: RoutineLimits,
): Promise<JsonValue> {
  return new Promise<JsonValue>((resolve, reject) => {
    const cancel = deadlines.add(started, timeoutMs, () => {
      const error = new Error(`timed out after ${timeoutMs} ms`);
      runContext.abort(error);
      // A generator is stopped at its next yield rather than left running for nobody.
      generator?.return(undefined).catch(() => undefined);
      reject(routineFailure(error));
    });
    pending.then(
      (output) => {
        cancel();
        try {
          resolve(checkedReply(routine, output));
        } catch (error) {
          reject(routineFailure(error));
        }
      },
      (error: unknown) => {
        cancel();
        reject(routineFailure(error));
      },
    );
  });
}
