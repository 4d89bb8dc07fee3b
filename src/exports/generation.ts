// `agora-agents/generation`: routines written by the LLM (generation, checks, approval, the sandbox that runs them).
export { RoutineGenerator, type RoutineGeneratorOptions } from '../generation/generate.js';
export { RoutineTypeChecker, type TypeCheckResult } from '../generation/checks/typecheck.js';
export { TaskRoutineStore, generateTaskRoutine, type TaskRoutineStoreOptions } from '../generation/task-routines.js';
export {
  listGeneratedRoutines,
  reviewGeneratedRoutine,
  type GeneratedRoutineEntry,
} from '../generation/lifecycle/review.js';
export type { RoutineStatus, RoutineStatusName, RoutineCounters } from '../generation/lifecycle/records.js';
