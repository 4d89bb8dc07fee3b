// The whole of `agora-agents` a generated module gets at run time, bundled into it by ./bundle.ts: the same check
// as src/routine/define.ts, from the one statement of the contract.
import { hasHandle, MISSING_HANDLE } from '../routine/handle.js';

/** `defineRoutine` for generated modules: checks the definition has a handle and marks it a routine. */
export function defineRoutine<T extends object>(definition: T): T & { readonly kind: 'routine' } {
  if (!hasHandle(definition)) throw new Error(MISSING_HANDLE);
  return Object.freeze({ ...definition, kind: 'routine' as const });
}
