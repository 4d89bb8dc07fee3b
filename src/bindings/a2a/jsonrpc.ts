// A2A's JSON-RPC 2.0 binding: `SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask` (1.0 names), and the
// 0.3 names older clients send (`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`), answered in
// each version's shapes. A text part is natural language; a data part `{protocolHash, body}` a protocol query.
import { randomUUID } from 'node:crypto';
import { describeError, isAgoraError } from '../../errors.js';
import { isoTime, type Logger } from '../../log.js';
import type { RequestContext } from '../../receiver.js';
import type { JsonObject, JsonValue, SuccessResponse } from '../../schemas.js';
import { header, type EdgeRequest } from '../../edge/request.js';
import { eventStream, json, jsonText, type EdgeResponse } from '../../edge/response.js';
import type { Ask } from '../../faces/ask.js';
import { callerOf, sessionKey } from '../../faces/sessions.js';
import { isBadBody, isTooLarge, readBodyText } from '../../faces/body.js';
import type { StreamAnswer } from '../../faces/stream.js';
import {
  jsonBytes,
  isObject,
  partJson,
  taskJson,
  questionOf,
  RpcError,
  A2A_ERRORS,
  type StoredTask,
  type Version,
} from './shapes.js';

export { A2A_ERRORS } from './shapes.js';

type Method = 'send' | 'stream' | 'get' | 'cancel';
// A Map, not an object: a method named `constructor` or `__proto__` must not find Object.prototype's.
const METHODS = new Map<string, [Method, Version]>([
  ['SendMessage', ['send', '1.0']],
  ['SendStreamingMessage', ['stream', '1.0']],
  ['GetTask', ['get', '1.0']],
  ['CancelTask', ['cancel', '1.0']],
  ['message/send', ['send', '0.3']],
  ['message/stream', ['stream', '0.3']],
  ['tasks/get', ['get', '0.3']],
  ['tasks/cancel', ['cancel', '0.3']],
]);

/** What the A2A face works with. */
export type A2aRpcDeps = {
  stream: StreamAnswer;
  /** Answers a blocking call whole (default: the last event of `stream`); the receiver's own promise skips the stream's machinery. */
  answer?: (question: Ask, context?: RequestContext) => Promise<SuccessResponse>;
  /** Whether requests carry a token (then a `contextId` is scoped by it: two callers' same id are two conversations). */
  tokensRequired?: boolean;
  maxBodyBytes: number;
  logger: Pick<Logger, 'error'>;
  now: () => number;
  /** Most finished tasks kept for `tasks/get` (default 10 000); the oldest are forgotten first. */
  maxTasks?: number;
  /** Most bytes of their messages kept (default 32 MiB): a count alone would let strangers park 1 MiB in each. */
  maxTaskBytes?: number;
};

/** A2A's JSON-RPC error response: HTTP `status` (200 for a JSON-RPC-level error), the code and message in the body. */
export function rpcError(status: number, id: JsonValue, code: number, message: string): EdgeResponse {
  return json(status, { jsonrpc: '2.0', id, error: { code, message } });
}

/** The A2A JSON-RPC endpoint: one POST, one JSON-RPC request (batches are refused). */
export function createA2aRpc(deps: A2aRpcDeps): (request: EdgeRequest) => Promise<EdgeResponse> {
  const tasks = new Map<string, { task: StoredTask; bytes: number }>();
  const maxTasks = deps.maxTasks ?? 10_000;
  const maxTaskBytes = deps.maxTaskBytes ?? 32 * 1024 * 1024;
  let keptBytes = 0;
  const remember = (task: StoredTask) => {
    const bytes = jsonBytes(task.input) + jsonBytes(task.output) + (task.error?.length ?? 0);
    // Too large to keep at all: `tasks/get` will not find it (the client had its answer).
    if (bytes > maxTaskBytes) return;
    for (const [id, kept] of tasks) {
      if (tasks.size < maxTasks && keptBytes + bytes <= maxTaskBytes) break;
      tasks.delete(id);
      keptBytes -= kept.bytes;
    }
    tasks.set(task.id, { task, bytes });
    keptBytes += bytes;
  };
  const reply = (id: JsonValue, result: JsonValue) => json(200, { jsonrpc: '2.0', id, result });
  const fail = (id: JsonValue, code: number, message: string) => rpcError(200, id, code, message);

  /** The caller as its token names it (`""` without tokens): its conversations and tasks are its own. */
  const principalOf = (request: EdgeRequest): string => callerOf(request, deps.tokensRequired ?? false) ?? '';

  function start(params: JsonObject, request: EdgeRequest): { task: StoredTask; ask: Ask } {
    const message = params.message;
    if (!isObject(message)) throw new RpcError(A2A_ERRORS.INVALID_PARAMS, 'params.message is required');
    const { ask, input } = questionOf(message);
    const given = message.contextId;
    if (given !== undefined && (typeof given !== 'string' || given.length === 0 || given.length > 256))
      throw new RpcError(A2A_ERRORS.INVALID_PARAMS, 'message.contextId must be a string');
    // A2A's default flow: a first message without contextId gets one of ours, and the next ones send it back; a client
    // may also choose its own. Either way the id is the conversation's, kept as given and scoped by the caller's token.
    const contextId = typeof given === 'string' ? given : randomUUID();
    const owner = principalOf(request);
    ask.session = sessionKey(owner, contextId);
    const task: StoredTask = {
      id: randomUUID(),
      contextId,
      owner,
      state: 'working',
      input,
      timestamp: isoTime(deps.now()),
    };
    return { task, ask };
  }

  function finish(task: StoredTask, output: JsonValue | undefined, error: unknown): void {
    task.timestamp = isoTime(deps.now());
    if (error === undefined) {
      task.state = 'completed';
      task.output = output;
    } else {
      task.state = 'failed';
      if (!isAgoraError(error)) deps.logger.error(`A2A: ${describeError(error)}`);
      task.error = isAgoraError(error) ? error.message : 'Internal error';
    }
    remember(task);
  }

  // Frames as A2A's clients read them: `data:` lines only, no event name.
  async function* streamEvents(
    id: JsonValue,
    task: StoredTask,
    ask: Ask,
    version: Version,
    signal?: AbortSignal,
  ): AsyncGenerator<string> {
    const event = (result: JsonValue) => `data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`;
    yield event(version === '1.0' ? { task: taskJson(task, version) } : taskJson(task, version));
    const artifactUpdate = (part: JsonValue, append: boolean, lastChunk: boolean) => {
      const artifact = { artifactId: `${task.id}-answer`, name: 'answer', parts: [partJson(part, version)] };
      const update = { taskId: task.id, contextId: task.contextId, artifact, append, lastChunk };
      return event(version === '1.0' ? { artifactUpdate: update } : { kind: 'artifact-update', ...update });
    };
    let output: JsonValue | undefined;
    let failure: unknown;
    let streamed = false;
    try {
      for await (const item of deps.stream(ask, signal ? { signal } : undefined)) {
        if (item.type === 'done') {
          output = item.reply.body;
          continue;
        }
        // The first piece opens the artifact, the next ones append to it.
        yield artifactUpdate(item.delta, streamed, false);
        streamed = true;
      }
    } catch (error) {
      failure = error;
    }
    // An answer that came whole (a routine, a JSON reply) is one artifact, a data part when it is JSON, as
    // `SendMessage` gives it.
    if (!streamed && failure === undefined && output !== undefined) yield artifactUpdate(output, false, true);
    finish(task, output, failure);
    const status = taskJson(task, version).status as JsonValue;
    const update = { taskId: task.id, contextId: task.contextId, status };
    // `final` is 0.3's: A2A 1.0's TaskStatusUpdateEvent has no such field (the stream's end says it), and 1.0 clients
    // that parse strictly refuse it.
    yield event(version === '1.0' ? { statusUpdate: update } : { kind: 'status-update', ...update, final: true });
  }

  async function answer(request: EdgeRequest, served: { version?: Version }): Promise<EdgeResponse> {
    let id: JsonValue = null;
    try {
      let envelope: unknown;
      try {
        envelope = JSON.parse(await readBodyText(request, deps.maxBodyBytes));
      } catch (error) {
        if (isTooLarge(error)) return rpcError(413, null, A2A_ERRORS.INVALID_REQUEST, 'Request too large');
        // Refused by the edge before any parse (nested too deeply): not a request this server takes, with its HTTP
        // status.
        if (isBadBody(error)) return rpcError(400, null, A2A_ERRORS.INVALID_REQUEST, error.message);
        return fail(null, A2A_ERRORS.PARSE, 'Parse error');
      }
      if (Array.isArray(envelope)) return fail(null, A2A_ERRORS.INVALID_REQUEST, 'Batch requests are not supported');
      if (!isObject(envelope) || envelope.jsonrpc !== '2.0' || typeof envelope.method !== 'string')
        return fail(null, A2A_ERRORS.INVALID_REQUEST, 'Invalid JSON-RPC request');
      if (typeof envelope.id === 'string' || typeof envelope.id === 'number') id = envelope.id;
      const known = METHODS.get(envelope.method);
      if (!known) return fail(id, A2A_ERRORS.METHOD_NOT_FOUND, `Method not found: ${envelope.method.slice(0, 100)}`);
      const [method, version] = known;
      served.version = version;
      // Each method name is one version's; a client that names its version (`A2A-Version`) must name that one.
      const stated = header(request, 'a2a-version')?.trim();
      if (stated && !stated.startsWith(version))
        return fail(
          id,
          A2A_ERRORS.METHOD_NOT_FOUND,
          `Method not found: ${envelope.method} is A2A ${version}'s, not ${stated.slice(0, 20)}'s`,
        );
      const params = envelope.params ?? {};
      if (!isObject(params)) throw new RpcError(A2A_ERRORS.INVALID_PARAMS, 'params must be an object');
      if (method === 'get' || method === 'cancel') {
        if (typeof params.id !== 'string') throw new RpcError(A2A_ERRORS.INVALID_PARAMS, 'params.id must be a task id');
        const found = tasks.get(params.id)?.task;
        // Another caller's task is not found: its id says nothing of whether it exists.
        const task = found?.owner === principalOf(request) ? found : undefined;
        if (!task) throw new RpcError(A2A_ERRORS.TASK_NOT_FOUND, `Task not found: ${params.id.slice(0, 100)}`);
        // Tasks are answered before they are listed, so none is left to cancel.
        if (method === 'cancel')
          throw new RpcError(A2A_ERRORS.TASK_NOT_CANCELABLE, `Task ${task.id} is ${task.state} and cannot be canceled`);
        return reply(id, taskJson(task, version));
      }
      const { task, ask } = start(params, request);
      if (method === 'stream') {
        const frames = streamEvents(id, task, ask, version, request.signal);
        return eventStream({ frames, cancel: () => void frames.return(undefined) });
      }
      let output: JsonValue | undefined;
      let failure: unknown;
      try {
        const context = request.signal ? { signal: request.signal } : undefined;
        if (deps.answer !== undefined) output = (await deps.answer(ask, context)).body;
        else for await (const item of deps.stream(ask, context)) if (item.type === 'done') output = item.reply.body;
      } catch (error) {
        failure = error;
      }
      finish(task, output, failure);
      return reply(id, version === '1.0' ? { task: taskJson(task, version) } : taskJson(task, version));
    } catch (error) {
      if (error instanceof RpcError) return fail(id, error.code, error.message);
      deps.logger.error(`A2A: ${describeError(error)}`);
      return jsonText(
        200,
        JSON.stringify({ jsonrpc: '2.0', id, error: { code: A2A_ERRORS.INTERNAL, message: 'Internal error' } }),
      );
    }
  }

  // Every answer says which version it was written in: the method's, or 1.0 before a method is known.
  return async function handle(request) {
    const served: { version?: Version } = {};
    const response = await answer(request, served);
    response.headers['a2a-version'] = served.version ?? '1.0';
    return response;
  };
}
