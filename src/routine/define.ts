import type { z } from 'zod';
import type { Logger } from '../log.js';
import type { ProtocolMetadata } from '../protocol/document.js';
import type { JsonObject, JsonValue } from '../schemas.js';

/** What a streaming routine yields: text to append to the reply as it is written, or a JSON value of progress. */
export type RoutineDelta = JsonValue;

/** A routine's reply: the body, a promise of it, or an async generator yielding deltas and returning it. */
export type RoutineReply<Output> = Output | Promise<Output> | AsyncGenerator<RoutineDelta, Output, void>;

/** What a routine knows about the query it answers. */
export type RoutineContext = {
  conversation: {
    /** The conversation id, or null for a single-round query. */
    id: string | null;
    /** 1 for the first query, then 2, 3… */
    turn: number;
    /** JSON state persisted across the turns of a multiround conversation: mutate it, it is saved after the turn. */
    state: JsonObject;
  };
  protocol: { name: string; hash: string; metadata: ProtocolMetadata };
  logger: Logger;
  /** The agent's tools, by name: each validates its input and returns its output. */
  tools: Record<string, (input: unknown) => Promise<unknown>>;
  /** Aborted when the routine's time limit passes. */
  signal: AbortSignal;
};

/** A routine as a plain function: the body in, the reply body out. */
export type RoutineFunction = (body: any, context: RoutineContext) => unknown;

/** A routine with zod schemas for its input and output. */
export type RoutineDefinition<Input = unknown, Output = unknown> = {
  input?: z.ZodType<Input>;
  output?: z.ZodType<Output>;
  /** The reply (a success body) to a body that fails `input`; default: the PD's own error, else a failure. */
  invalidInput?: unknown;
  /** Answers a body; an async generator streams: its yields are deltas, its return value the body. */
  handle(body: Input, context: RoutineContext): RoutineReply<Output>;
};

/** A loaded routine, normalized. */
export type Routine = RoutineDefinition<any, any> & { readonly kind: 'routine' };

/**
 * Defines a routine whose input and output are checked with zod. A generator `handle` streams: each `yield` is a
 * delta sent to a streaming client as it comes (text, or JSON progress), and its `return` is the reply body.
 * @example
 * export default defineRoutine({
 *   input: z.object({ city: z.string() }),
 *   output: z.object({ weather: z.string() }),
 *   handle: ({ city }) => ({ weather: city === 'London' ? 'rainy' : 'sunny' }),
 * });
 */
export function defineRoutine<InputSchema extends z.ZodType = z.ZodType<any>, OutputSchema extends z.ZodType = z.ZodType<any>>(definition: {
  input?: InputSchema;
  output?: OutputSchema;
  invalidInput?: unknown;
  handle(body: z.output<InputSchema>, context: RoutineContext): RoutineReply<z.input<OutputSchema>>;
}): Routine {
  if (typeof definition.handle !== 'function') throw new Error('defineRoutine needs a handle function');
  return Object.freeze({ ...definition, kind: 'routine' as const });
}

/** A routine from a module's default export: a `defineRoutine` value or a plain function. */
export function toRoutine(value: unknown, origin: string): Routine {
  if (typeof value === 'function') return { kind: 'routine', handle: value as RoutineFunction };
  if (value && typeof value === 'object' && typeof (value as Routine).handle === 'function') {
    return { ...(value as Routine), kind: 'routine' };
  }
  throw new Error(`${origin}: the default export must be a function or defineRoutine({ handle })`);
}
