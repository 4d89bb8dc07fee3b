import { AGENT_DEFAULTS } from '../agent/defaults.js';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { plural } from '../_plural.js';
import { folderArgument } from './_arguments.js';
import { openMemory } from './_memory.js';
import {
  findGeneratedRoutine,
  listGeneratedRoutines,
  reviewGeneratedRoutine,
  type GeneratedRoutineEntry,
} from '../generation/lifecycle/review.js';
import { defineCommand, printJson, stringOption, UsageError, type ParsedArgs } from './_command.js';
import { jsonOption, STORE_CONNECTION_OPTIONS, storeOf, storeOption, wantsJson } from './_options.js';

const ACTIONS = ['list', 'show', 'approve', 'reject'] as const;
type Action = (typeof ACTIONS)[number];

function share(entry: GeneratedRoutineEntry): string {
  return entry.llmShare === null ? '-' : `${Math.round(entry.llmShare * 100)}%`;
}

function label(entry: GeneratedRoutineEntry): string {
  return entry.kind === 'task' ? `task ${entry.task ?? ''} (${entry.protocol || '?'})` : entry.protocol || '?';
}

function printList(entries: GeneratedRoutineEntry[], dir: string): void {
  if (!entries.length) {
    process.stdout.write(`no protocol served by the LLM yet in ${dir}\n`);
    return;
  }
  const rows = [
    ['ID', 'NAME', 'HASH', 'USES', 'LLM', 'STATUS'],
    ...entries.map((entry) => [
      entry.id,
      label(entry),
      entry.hash.slice(0, 8),
      String(entry.counters.uses),
      share(entry),
      entry.status,
    ]),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows)
    process.stdout.write(
      `${row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd()}\n`,
    );
}

async function show(entry: GeneratedRoutineEntry, dir: string, json: boolean): Promise<void> {
  const record = entry.record;
  let code: string | undefined;
  if (record?.file) code = await readFile(resolve(dir, record.file), 'utf8').catch(() => undefined);
  if (json) {
    printJson({ ...entry, ...(code !== undefined ? { code } : {}) });
    return;
  }
  const { uses, llm, routine, failures } = entry.counters;
  const lines = [
    `${label(entry)}  ${entry.id}`,
    `hash:     ${entry.hash}`,
    `status:   ${entry.status}${record?.reason ? ` (${record.reason})` : ''}`,
    `uses:     ${uses} (${llm} by the LLM, ${routine} by the routine, ${failures} routine failures)`,
  ];
  if (record) {
    lines.push(
      `written:  ${record.createdAt}${record.model ? ` by ${record.model}` : ''}${record.attempts ? `, ${plural(record.attempts, 'attempt')}` : ''}`,
    );
    if (record.reviewedAt) lines.push(`reviewed: ${record.reviewedAt}`);
    if (record.checks?.length) lines.push(`checks:   ${record.checks.join('; ')}`);
    if (record.errors?.length) lines.push('errors:', ...record.errors.map((error) => `  - ${error}`));
    if (record.file) lines.push(`file:     ${record.file}${code === undefined ? ' (missing)' : ''}`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  if (code !== undefined) process.stdout.write(`\n${code.endsWith('\n') ? code : `${code}\n`}`);
}

async function parse(args: ParsedArgs): Promise<{ action: Action; reference?: string; dir: string }> {
  const [action, ...rest] = args.positionals;
  if (!action || !(ACTIONS as readonly string[]).includes(action)) {
    throw new UsageError(`expected one of ${ACTIONS.join(', ')}${action ? `, got "${action}"` : ''}`);
  }
  if (action === 'list') {
    if (rest.length > 1) throw new UsageError('list takes at most one folder');
    return { action, dir: await folderArgument(rest[0], '[dir]') };
  }
  const [reference, folder, ...extra] = rest;
  if (!reference) throw new UsageError(`${action} needs a routine: its id, the protocol's name or a hash prefix`);
  if (extra.length) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
  return { action: action as Action, reference, dir: await folderArgument(folder, '[dir]') };
}

/** `agora routines list|show|approve|reject`: review the routines the LLM wrote for an agent folder. */
export const command = defineCommand(
  {
    name: 'routines',
    summary: 'List, show, approve or reject routines written by the LLM',
    usage:
      'agora routines list [dir] [--json] | show <name|hash> [dir] | approve <name|hash> [dir] | reject <name|hash> [dir]',
  },
  {
    options: {
      json: jsonOption('Print JSON (list, show)'),
      store: storeOption(
        'Where the agent keeps what it learned (as for agora serve)',
        'AGORA_STORE',
        AGENT_DEFAULTS.store,
      ),
      ...STORE_CONNECTION_OPTIONS,
    },
    details: [
      "A routine is named by its id (the generated file name, e.g. unit-conversion-0a1b2c3d), the protocol's name, or a hash prefix.",
      'Approving takes effect in a running `agora serve` of the same folder within a second; rejecting keeps the file for reading.',
      'Exits 1 when no routine matches.',
    ].join('\n'),
    async run(args) {
      const { action, reference, dir } = await parse(args);
      const json = wantsJson(args);
      const { memory, close } = await openMemory(dir, storeOf(args));
      try {
        if (action === 'list') {
          const entries = await listGeneratedRoutines(memory);
          if (json)
            printJson(
              entries.map(({ record: _record, prefix: _prefix, ...entry }) => ({
                ...entry,
                ...(_record?.file ? { file: _record.file } : {}),
              })),
            );
          else printList(entries, dir);
          return 0;
        }
        if (action === 'show') {
          await show(await findGeneratedRoutine(memory, reference!), dir, json);
          return 0;
        }
        const entry = await reviewGeneratedRoutine({
          dir,
          memory,
          reference: reference!,
          decision: action === 'approve' ? 'approve' : 'reject',
        });
        process.stdout.write(
          action === 'approve'
            ? `approved ${entry.id}: a running agent on this folder uses it within a second\n`
            : `rejected ${entry.id}: the LLM keeps serving "${entry.protocol}"; ${entry.record?.file ?? 'the file'} is kept for reading\n`,
        );
        return 0;
      } finally {
        await close();
      }
    },
  },
);
