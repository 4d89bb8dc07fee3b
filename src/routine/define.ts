import { AgoraError } from '../errors.js';
import { compiledSchema } from '../schemas.js';
import type { DefineRoutine, Routine, RoutineContext } from './contract.js';
import { hasHandle, MISSING_HANDLE } from './handle.js';

export type {
  DefineRoutine,
  Routine,
  RoutineContext,
  RoutineDefinition,
  RoutineDelta,
  RoutineReply,
  TaskRoutine,
} from './contract.js';

/** A routine as a plain function: the body in, the reply body out. */
export type RoutineFunction = (body: any, context: RoutineContext) => unknown;

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
export const defineRoutine: DefineRoutine = (definition) => {
  if (!hasHandle(definition)) throw new AgoraError('INVALID_ARGUMENT', MISSING_HANDLE);
  return Object.freeze({ ...definition, kind: 'routine' as const });
};

/** A routine from a module's default export: a `defineRoutine` value or a plain function. */
export function toRoutine(value: unknown, origin: string): Routine {
  if (typeof value === 'function') return { kind: 'routine', handle: value as RoutineFunction };
  if (value && typeof value === 'object' && typeof (value as Routine).handle === 'function') {
    const routine: Routine = { ...(value as Routine), kind: 'routine' };
    // Checked on every query: compiled once here.
    if (routine.input) routine.input = compiledSchema(routine.input);
    if (routine.output) routine.output = compiledSchema(routine.output);
    return routine;
  }
  throw new AgoraError(
    'INVALID_ARGUMENT',
    `${origin}: the default export must be a function or defineRoutine({ handle })`,
  );
}
