// A2A's messages and tasks in each version's JSON shape (1.0 and 0.3), its error codes, and the question a
// message's parts carry: a text part is natural language, a data part `{protocolHash, body}` a protocol query.
import type { JsonObject, JsonValue } from '../../schemas.js';
import type { Ask } from '../../faces/ask.js';

/** A2A's error codes (JSON-RPC's own, then A2A's). */
export const A2A_ERRORS = {
  PARSE: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL: -32603,
  TASK_NOT_FOUND: -32001,
  TASK_NOT_CANCELABLE: -32002,
  UNSUPPORTED_OPERATION: -32004,
  CONTENT_TYPE_NOT_SUPPORTED: -32005,
  VERSION_NOT_SUPPORTED: -32009,
} as const;

/** An A2A version this face speaks. */
export type Version = '1.0' | '0.3';
/** A task's state as this face keeps it. */
export type State = 'working' | 'completed' | 'failed';
/** A task as kept for `GetTask`; `owner` is the caller's principal (a token's digest), who alone may read it. */
export type StoredTask = {
  id: string;
  contextId: string;
  owner: string;
  state: State;
  input: JsonValue[];
  output?: JsonValue;
  error?: string;
  timestamp: string;
};

/** A JSON-RPC error with its A2A code. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** The length of a value's JSON text: what keeping it costs, near enough. */
export function jsonBytes(value: JsonValue | undefined): number {
  return value === undefined ? 0 : (JSON.stringify(value)?.length ?? 0);
}

/** Whether a JSON value is an object. */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A value as a part of a message, in a version's shape. */
export function partJson(value: JsonValue, version: Version): JsonObject {
  if (typeof value === 'string') return version === '1.0' ? { text: value } : { kind: 'text', text: value };
  if (version === '1.0') return { data: value, mediaType: 'application/json' };
  // A 0.3 DataPart holds an object; any other JSON goes as its text.
  return isObject(value) ? { kind: 'data', data: value } : { kind: 'text', text: JSON.stringify(value) };
}

/** A task's message (the caller's, or the agent's), in a version's shape. */
export function messageJson(
  task: StoredTask,
  role: 'user' | 'agent',
  parts: JsonValue[],
  version: Version,
  messageId: string,
): JsonObject {
  const common = {
    messageId,
    contextId: task.contextId,
    taskId: task.id,
    parts: parts.map((part) => partJson(part, version)),
  };
  return version === '1.0'
    ? { ...common, role: role === 'user' ? 'ROLE_USER' : 'ROLE_AGENT' }
    : { kind: 'message', ...common, role };
}

const STATES_1_0: Record<State, string> = {
  working: 'TASK_STATE_WORKING',
  completed: 'TASK_STATE_COMPLETED',
  failed: 'TASK_STATE_FAILED',
};

/** A kept task as a version's Task JSON. */
export function taskJson(task: StoredTask, version: Version): JsonObject {
  const answer = task.error !== undefined ? [task.error] : task.output !== undefined ? [task.output] : [];
  const agent = answer.length ? messageJson(task, 'agent', answer, version, `${task.id}-reply`) : undefined;
  const status: JsonObject = {
    state: version === '1.0' ? STATES_1_0[task.state] : task.state,
    timestamp: task.timestamp,
  };
  if (agent) status.message = agent;
  const json: JsonObject = {
    id: task.id,
    contextId: task.contextId,
    status,
    artifacts:
      task.output !== undefined
        ? [{ artifactId: `${task.id}-answer`, name: 'answer', parts: [partJson(task.output, version)] }]
        : [],
    history: [messageJson(task, 'user', task.input, version, `${task.id}-request`), ...(agent ? [agent] : [])],
  };
  return version === '1.0' ? json : { kind: 'task', ...json };
}

/** Reads the question in a message's parts: a data part `{protocolHash, body}`, else the text parts joined. */
export function questionOf(message: JsonObject): { ask: Ask; input: JsonValue[] } {
  const parts = message.parts;
  if (!Array.isArray(parts) || parts.length === 0)
    throw new RpcError(A2A_ERRORS.INVALID_PARAMS, 'message.parts must be a non-empty array');
  const texts: string[] = [];
  for (const part of parts) {
    if (!isObject(part)) throw new RpcError(A2A_ERRORS.INVALID_PARAMS, 'each part must be an object');
    const data = part.data;
    if (isObject(data) && typeof data.protocolHash === 'string') {
      if (data.body === undefined)
        throw new RpcError(A2A_ERRORS.INVALID_PARAMS, 'a data part with protocolHash needs a body');
      const ask: Ask = { protocolHash: data.protocolHash, body: data.body };
      if (Array.isArray(data.protocolSources) && data.protocolSources.every((source) => typeof source === 'string'))
        ask.protocolSources = data.protocolSources as string[];
      return { ask, input: [data] };
    }
    if (typeof part.text === 'string') texts.push(part.text);
    else if (data !== undefined) texts.push(JSON.stringify(data));
    else throw new RpcError(A2A_ERRORS.CONTENT_TYPE_NOT_SUPPORTED, 'Only text and data parts are supported');
  }
  const text = texts.join('\n');
  return { ask: { body: text }, input: [text] };
}
