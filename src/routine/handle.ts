// What makes a value a routine definition at run time, shared by `defineRoutine` and the QuickJS
// sandbox's shim of it (src/generation/sandbox/quickjs-bundle.ts).

/** The message of a `defineRoutine` call without a handle function. */
export const MISSING_HANDLE = 'defineRoutine needs a handle function';

/** Whether a value can be a routine definition: an object with a `handle` function. */
export function hasHandle(definition: unknown): definition is { handle: (...args: never[]) => unknown } {
  return !!definition && typeof (definition as { handle?: unknown }).handle === 'function';
}
