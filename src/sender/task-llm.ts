// The steps of a typed task that its LLM does: judge whether a PD fits, write the query body, read the reply.
import { z } from 'zod';
import { AgoraError } from '../errors.js';
import { extractJson, prescribesJson } from '../llm/peer-answers.js';
import { converse } from '../llm/tool-loop.js';
import { type LanguageModel, type LlmMessage, type UsageSink } from '../llm/model.js';
import type { ProtocolDocument } from '../protocol/document.js';
import { jsonText, type JsonValue } from '../schemas.js';

/** JSON Schemas of a task's input and output, as the LLM is shown them. */
/** A typed task: what it is for, and zod schemas of its input and output. */
export type TaskSpec<Input = unknown, Output = unknown> = {
  name: string;
  description: string;
  input: z.ZodType<Input>;
  output: z.ZodType<Output>;
};

export type TaskSchemas = { input?: Record<string, unknown>; output?: Record<string, unknown> };

/** The LLM of one task call, the sink its usage goes to, and the call's abort signal. */
export type TaskLlm = { llm: LanguageModel; onUsage: UsageSink; signal?: AbortSignal | undefined };

type Checked<T> = { ok: true; value: T } | { ok: false; error: string };

/** A task's schemas as JSON Schema (what the LLM reads), each undefined when zod cannot represent it. */
export function taskSchemas(task: TaskSpec): TaskSchemas {
  return { input: jsonSchemaOf(task.input, 'output'), output: jsonSchemaOf(task.output, 'input') };
}

function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> | undefined {
  try {
    return z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function lastLineVerdict(text: string): boolean {
  const last =
    text
      .trim()
      .split('\n')
      .filter((line) => line.trim())
      .pop() ?? '';
  return /^\W*yes\W*$/i.test(last.trim()) || (/\byes\b/i.test(last) && !/\bno\b/i.test(last));
}

function describeTask(task: TaskSpec, schemas: TaskSchemas, input: unknown): string {
  const lines = [`Task: ${task.name}. ${task.description}`.trim(), `Input (JSON): ${JSON.stringify(input)}`];
  if (schemas.output) lines.push(`What the task needs back (JSON Schema): ${JSON.stringify(schemas.output)}`);
  return lines.join('\n');
}

function options(call: TaskLlm) {
  return { maxSteps: 1, onUsage: call.onUsage, ...(call.signal ? { signal: call.signal } : {}) };
}

/** Whether the LLM judges that a PD lets the task be done with a query under it. */
export async function judgeFit(
  call: TaskLlm,
  task: TaskSpec,
  schemas: TaskSchemas,
  document: ProtocolDocument,
): Promise<boolean> {
  const system = [
    'You are an agent on the Agora network. You decide whether a protocol document lets you do a task by querying another',
    "agent under it: a query written from the task's input must be valid under the protocol, and the reply must hold",
    'everything the task needs back. Answer with one line of reasoning, then a last line that is exactly YES or NO.',
  ].join('\n');
  const lines = [`Task: ${task.name}. ${task.description}`.trim()];
  if (schemas.input) lines.push(`The task's input (JSON Schema): ${JSON.stringify(schemas.input)}`);
  if (schemas.output) lines.push(`What the task needs back (JSON Schema): ${JSON.stringify(schemas.output)}`);
  lines.push('', '<protocol>', document.text.trim(), '</protocol>');
  const result = await converse(call.llm, {
    intent: { purpose: 'task' },
    system,
    messages: [{ role: 'user', content: lines.join('\n') }],
    temperature: 0,
    ...options(call),
  });
  return lastLineVerdict(result.text);
}

/** The body of the task's query, written by the LLM: natural language, or what the PD prescribes. */
export async function writeBody(
  call: TaskLlm,
  task: TaskSpec,
  schemas: TaskSchemas,
  document: ProtocolDocument | undefined,
  input: unknown,
): Promise<JsonValue> {
  const prompt = describeTask(task, schemas, input);
  if (!document) {
    const system = [
      'You are an agent on the Agora network. You do a task by sending one message in natural language to another agent.',
      'Write that message from the task and its input: self-contained, asking for exactly what the task needs back.',
      'Reply with the message only: no preamble.',
    ].join('\n');
    const result = await converse(call.llm, {
      intent: { purpose: 'task' },
      system,
      messages: [{ role: 'user', content: prompt }],
      ...options(call),
    });
    const text = result.text.trim();
    if (!text) throw new AgoraError('INVALID_OUTPUT', `task "${task.name}": the LLM wrote an empty query`);
    return text;
  }
  const json = prescribesJson(document);
  const system = [
    'You are an agent on the Agora network. You do a task by querying another agent under this protocol document, which',
    'is the contract both sides follow:',
    '<protocol>',
    document.text.trim(),
    '</protocol>',
    '',
    "Write the body of the query exactly as the protocol prescribes for the sender, from the task's input.",
    json
      ? 'Reply with only the JSON value of the body: no prose, no code fences.'
      : 'Reply with the body only: no preamble.',
  ].join('\n');
  if (!json) {
    const result = await converse(call.llm, {
      intent: { purpose: 'task' },
      system,
      messages: [{ role: 'user', content: prompt }],
      ...options(call),
    });
    return result.text.trim();
  }
  return askJson(
    call,
    system,
    prompt,
    (value) => ({ ok: true, value }),
    (error) => `task "${task.name}": the LLM's query body under "${document.metadata.name}" is not JSON: ${error}`,
  );
}

/** The task's output, read from the peer's reply by the LLM and checked against the task's output schema. */
export async function readReply(
  call: TaskLlm,
  task: TaskSpec,
  schemas: TaskSchemas,
  document: ProtocolDocument | undefined,
  input: unknown,
  reply: JsonValue,
): Promise<unknown> {
  const system = [
    'You are an agent on the Agora network. You queried another agent for a task; turn its reply into the JSON value the',
    'task needs back.',
    schemas.output ? `That value must match this JSON Schema: ${JSON.stringify(schemas.output)}` : '',
    'Reply with only the JSON value: no prose, no code fences. Take the facts from the reply only.',
  ]
    .filter(Boolean)
    .join('\n');
  const lines = [describeTask(task, {}, input)];
  if (document)
    lines.push('', 'The query was made under this protocol:', '<protocol>', document.text.trim(), '</protocol>');
  lines.push('', 'The other agent replied:', jsonText(reply));
  return askJson(
    call,
    system,
    lines.join('\n'),
    (value) => {
      const parsed = task.output.safeParse(value);
      return parsed.success
        ? { ok: true, value: parsed.data }
        : { ok: false, error: `it does not match the schema: ${z.prettifyError(parsed.error)}` };
    },
    (error) => `task "${task.name}": the reply could not be turned into the task's output: ${error}`,
  );
}

/** Asks for a JSON value, checks it, and asks once more with the error before giving up with INVALID_OUTPUT. */
async function askJson<T>(
  call: TaskLlm,
  system: string,
  prompt: string,
  check: (value: JsonValue) => Checked<T>,
  failure: (error: string) => string,
): Promise<T> {
  const settings = { intent: { purpose: 'task' as const }, system, temperature: 0, ...options(call) };
  const attempt = (text: string): Checked<T> => {
    const json = extractJson(text);
    if (!json.ok) return { ok: false, error: `not JSON (${json.error})` };
    return check(json.value);
  };
  const first = await converse(call.llm, { ...settings, messages: [{ role: 'user', content: prompt }] });
  const checked = attempt(first.text);
  if (checked.ok) return checked.value;
  const messages: LlmMessage[] = [
    ...first.messages,
    { role: 'user', content: `Your reply is not usable: ${checked.error}. Reply again with only the JSON value.` },
  ];
  const second = await converse(call.llm, { ...settings, messages });
  const repaired = attempt(second.text);
  if (repaired.ok) return repaired.value;
  throw new AgoraError('INVALID_OUTPUT', failure(repaired.error));
}
