// Review: what `agora routines` lists, shows, approves and rejects. Reads and writes memory only, so the CLI
// loads neither the type checker nor the sandbox.
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { AgoraError } from '../../errors.js';
import type { AgentMemory } from '../../memory/file.js';
import { normalizeHash } from '../../protocol/document.js';
import type { JsonValue } from '../../schemas.js';
import {
  COUNTER_FIELDS,
  protocolStem,
  routineSlug,
  taskStem,
  type RoutineCounters,
  type RoutineStatus,
  type RoutineStatusName,
} from './records.js';

/** One protocol (or task) with counters or a generated routine, as `agora routines list` shows it. */
export type GeneratedRoutineEntry = {
  kind: 'protocol' | 'task';
  /** The name the CLI accepts first: the generated file's stem, e.g. `unit-conversion-0a1b2c3d`. */
  id: string;
  /** The protocol document's name. */
  protocol: string;
  task?: string;
  hash: string;
  counters: RoutineCounters;
  /** LLM-served share of the uses, 0..1, or null before any use. */
  llmShare: number | null;
  status: RoutineStatusName | 'none';
  record?: RoutineStatus;
  /** The memory prefix of its keys. */
  prefix: string;
};

async function readCounters(memory: AgentMemory, prefix: string): Promise<RoutineCounters> {
  const values = await Promise.all(COUNTER_FIELDS.map((field) => memory.get(`${prefix}/counters/${field}`)));
  const counters = { uses: 0, llm: 0, routine: 0, failures: 0 };
  COUNTER_FIELDS.forEach((field, index) => {
    const value = values[index];
    counters[field] = typeof value === 'number' ? value : 0;
  });
  return counters;
}

/** Every protocol and task with counters or a generated routine in an agent's memory. */
export async function listGeneratedRoutines(memory: AgentMemory): Promise<GeneratedRoutineEntry[]> {
  const prefixes = new Map<string, { kind: 'protocol' | 'task'; hash: string; taskSlug?: string }>();
  for (const key of await memory.keys('routines/')) {
    const match = /^routines\/([0-9a-f]{40})\//.exec(key);
    if (match?.[1]) prefixes.set(`routines/${match[1]}`, { kind: 'protocol', hash: match[1] });
  }
  for (const key of await memory.keys('task-routines/')) {
    const match = /^task-routines\/([A-Za-z0-9._-]+)\/([0-9a-f]{40})\//.exec(key);
    if (match?.[1] && match[2])
      prefixes.set(`task-routines/${match[1]}/${match[2]}`, { kind: 'task', hash: match[2], taskSlug: match[1] });
  }
  const entries: GeneratedRoutineEntry[] = [];
  for (const [prefix, found] of prefixes) {
    const [record, meta, counters] = await Promise.all([
      memory.get(`${prefix}/status`) as Promise<RoutineStatus | undefined>,
      memory.get(`${prefix}/meta`) as Promise<{ protocol?: string; task?: string } | undefined>,
      readCounters(memory, prefix),
    ]);
    const protocol = record?.protocol || meta?.protocol || '';
    const task = found.kind === 'task' ? (record?.task ?? meta?.task ?? found.taskSlug ?? '') : undefined;
    const stemFromFile = record?.file ? record.file.replace(/^.*\//, '').replace(/\.ts$/, '') : undefined;
    const id =
      stemFromFile ?? (found.kind === 'task' ? taskStem(task ?? '', found.hash) : protocolStem(protocol, found.hash));
    entries.push({
      kind: found.kind,
      id,
      protocol,
      ...(task !== undefined ? { task } : {}),
      hash: found.hash,
      counters,
      llmShare: counters.uses ? Math.min(1, counters.llm / counters.uses) : null,
      status: record?.status ?? 'none',
      ...(record ? { record } : {}),
      prefix,
    });
  }
  return entries.sort((a, b) => a.kind.localeCompare(b.kind) || a.id.localeCompare(b.id));
}

/**
 * The entry a name designates: the generated file's stem or path, the PD's (or task's) name or slug, or a hash
 * prefix of 4+ hex characters. Throws AgoraError('NOT_FOUND') when none or several match.
 */
export async function findGeneratedRoutine(memory: AgentMemory, reference: string): Promise<GeneratedRoutineEntry> {
  const entries = await listGeneratedRoutines(memory);
  const wanted = reference.trim().replace(/^.*\//, '').replace(/\.ts$/, '').toLowerCase();
  const slug = routineSlug(reference);
  const tests: ((entry: GeneratedRoutineEntry) => boolean)[] = [
    (entry) => entry.id.toLowerCase() === wanted,
    (entry) =>
      (entry.kind === 'task' ? [entry.task ?? '', `task-${routineSlug(entry.task ?? '')}`] : [entry.protocol]).some(
        (name) =>
          name.toLowerCase() === reference.trim().toLowerCase() || routineSlug(name) === slug || name === wanted,
      ),
    (entry) => /^[0-9a-f]{4,40}$/.test(wanted) && entry.hash.startsWith(wanted),
    // A whole hash in base64 (the Python SDK's encoding), as accepted everywhere else a hash is received.
    (entry) => entry.hash === normalizeHash(reference.trim()),
  ];
  for (const test of tests) {
    const matches = entries.filter(test);
    if (matches.length === 1) return matches[0]!;
    if (matches.length > 1)
      throw new AgoraError(
        'NOT_FOUND',
        `"${reference}" matches several routines: ${matches.map((entry) => entry.id).join(', ')}`,
      );
  }
  throw new AgoraError('NOT_FOUND', `no generated routine or protocol matches "${reference}"`);
}

/** Options of {@link reviewGeneratedRoutine}. */
export type ReviewOptions = {
  dir: string;
  memory: AgentMemory;
  reference: string;
  decision: 'approve' | 'reject';
  now?: () => number;
};

/**
 * Approves or rejects a generated routine (what `agora routines approve|reject` calls). Rejecting deletes nothing:
 * the file stays for reading. A running agent on the same memory picks the change up within a second.
 */
export async function reviewGeneratedRoutine(options: ReviewOptions): Promise<GeneratedRoutineEntry> {
  const entry = await findGeneratedRoutine(options.memory, options.reference);
  const record = entry.record;
  if (!record?.file || record.status === 'generating' || record.status === 'failed') {
    throw new AgoraError('NOT_FOUND', `${entry.id} has no routine to ${options.decision} (status: ${entry.status})`);
  }
  if (options.decision === 'approve') {
    try {
      await stat(resolve(options.dir, record.file));
    } catch {
      throw new AgoraError('NOT_FOUND', `${entry.id}: the file ${record.file} is missing from ${options.dir}`);
    }
  }
  const at = new Date((options.now ?? Date.now)()).toISOString();
  const status: RoutineStatus = {
    ...record,
    status: options.decision === 'approve' ? 'approved' : 'rejected',
    updatedAt: at,
    reviewedAt: at,
  };
  if (options.decision === 'approve') {
    delete status.reason;
    // A re-enabled routine starts with a clean slate, or its next failure would disable it again at once.
    await options.memory.set(`${entry.prefix}/consecutive-failures`, 0);
  }
  await options.memory.set(`${entry.prefix}/status`, status as unknown as JsonValue);
  return { ...entry, status: status.status, record: status };
}
