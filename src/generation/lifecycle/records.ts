import { slug } from '../../_slug.js';
// What memory keeps about generated routines, shared by the agent that writes and runs them and the CLI that
// reviews them: the status record, the counters, and the names and key prefixes derived from a protocol or task.

/** Where a generated routine stands: written and checked (`pending`), usable (`approved`), or not. */
export type RoutineStatusName = 'generating' | 'pending' | 'approved' | 'rejected' | 'disabled' | 'failed';

/** What memory keeps about one generated routine (`routines/<hash>/status`, `task-routines/<task>/<hash>/status`). */
export type RoutineStatus = {
  status: RoutineStatusName;
  kind: 'protocol' | 'task';
  /** The protocol document's name. */
  protocol: string;
  hash: string;
  /** The task's name (task routines only). */
  task?: string;
  /** The module, relative to the agent folder. */
  file?: string;
  /** The checks it passed. */
  checks?: string[];
  /** The cases behind those checks: body, expected and actual reply (previews), at most 20. */
  cases?: CheckCase[];
  attempts?: number;
  /** The last errors, when generation gave up. */
  errors?: string[];
  /** Why it was disabled. */
  reason?: string;
  model?: string;
  typeCheckMs?: number;
  createdAt: string;
  updatedAt: string;
  reviewedAt?: string;
};

/** Uses of a protocol (or task) counted per first turn, and the generated routine's failures. */
export type RoutineCounters = { uses: number; llm: number; routine: number; failures: number };

/** The counters' names, each kept at `<prefix>/counters/<name>`. */
export const COUNTER_FIELDS = ['uses', 'llm', 'routine', 'failures'] as const;

/** One of {@link COUNTER_FIELDS}. */
export type CounterField = (typeof COUNTER_FIELDS)[number];

/** A file-name slug of a protocol or task name: lowercase ASCII words joined by `-`. */
export function routineSlug(name: string): string {
  return slug(name, { maxLength: 40, fallback: 'protocol' });
}

/** The stem of a protocol's generated file (`unit-conversion-0a1b2c3d`), also its id in the CLI. */
export function protocolStem(protocol: string, hash: string): string {
  return `${routineSlug(protocol)}-${hash.slice(0, 8)}`;
}

/** The stem of a task's generated file (`task-get-forecast-0a1b2c3d`), also its id in the CLI. */
export function taskStem(task: string, hash: string): string {
  return `task-${routineSlug(task)}-${hash.slice(0, 8)}`;
}

/** The memory prefix of a protocol's keys (status, meta, counters). */
export function protocolPrefix(hash: string): string {
  return `routines/${hash}`;
}

/** The memory prefix of a task's keys under one protocol (status, meta, counters, examples). */
export function taskPrefix(task: string, hash: string): string {
  return `task-routines/${routineSlug(task)}/${hash}`;
}

/** One check a routine passed, as the dashboard shows it: the body, the reply expected and the routine's, previewed. */
export type CheckCase = { label: string; by: 'value' | 'shape'; body: string; expected: string; actual: string };
