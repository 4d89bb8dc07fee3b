// OAP's `POST /invoke`: a TaskEnvelope in, the same envelope back with the answer in `memory.last_result` and a step
// appended (unknown fields kept as they came).
import { describeError, isAgoraError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { ReceiverApi } from '../../receiver.js';
import type { JsonObject, JsonValue } from '../../schemas.js';
import type { MountedRequest } from '../../edge/mount.js';
import type { EdgeResponse } from '../../edge/response.js';
import { ask, type Ask, type SessionMap } from '../ask.js';
import { isTooLarge, readBodyText } from '../body.js';

/** What `POST /invoke` works with. */
export type OapInvokeDeps = {
  receiver: ReceiverApi;
  sessions: SessionMap;
  name: string;
  maxBodyBytes: number;
  logger: Pick<Logger, 'error'>;
  now: () => number;
  /** OAP's error body `{error, detail}`. */
  failure(status: number, error: string, detail: string): EdgeResponse;
  json(status: number, value: unknown): EdgeResponse;
};

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The agent to hand the task to next, when the answer names one (`next_agent`, or `handoff.next_agent`). */
function nextAgent(body: JsonValue): string | undefined {
  if (!isObject(body)) return undefined;
  const direct = body.next_agent;
  if (typeof direct === 'string' && direct) return direct;
  const handoff = body.handoff;
  return isObject(handoff) && typeof handoff.next_agent === 'string' && handoff.next_agent ? handoff.next_agent : undefined;
}

/** Answers `POST /invoke` (any other method: 405 in OAP's shape). */
export async function invoke(deps: OapInvokeDeps, request: MountedRequest): Promise<EdgeResponse> {
  const { failure } = deps;
  if (request.method !== 'POST') return failure(405, 'method_not_allowed', 'POST a TaskEnvelope to /invoke');
  let envelope: unknown;
  try {
    envelope = JSON.parse(await readBodyText(request, deps.maxBodyBytes));
  } catch (error) {
    if (isTooLarge(error)) return failure(413, 'request_too_large', 'Request too large');
    return failure(400, 'invalid_envelope', 'The body must be a JSON TaskEnvelope');
  }
  if (!isObject(envelope)) return failure(400, 'invalid_envelope', 'The body must be a JSON TaskEnvelope');
  const { goal } = envelope;
  const memory = envelope.memory ?? {};
  const steps = envelope.steps ?? [];
  if (typeof goal !== 'string' || goal.trim() === '') return failure(422, 'invalid_envelope', 'goal must be a non-empty string');
  if (!isObject(memory)) return failure(422, 'invalid_envelope', 'memory must be an object');
  if (!Array.isArray(steps)) return failure(422, 'invalid_envelope', 'steps must be an array');
  if (envelope.constraints !== undefined && envelope.constraints !== null && !isObject(envelope.constraints)) return failure(422, 'invalid_envelope', 'constraints must be an object');
  const agora = memory.agora;
  let question: Ask = { body: goal };
  let route: 'protocol' | 'llm' = 'llm';
  if (isObject(agora) && typeof agora.protocolHash === 'string') {
    if (agora.body === undefined) return failure(422, 'invalid_envelope', 'memory.agora needs protocolHash and body');
    question = { protocolHash: agora.protocolHash, body: agora.body };
    if (Array.isArray(agora.protocolSources) && agora.protocolSources.every((source) => typeof source === 'string')) question.protocolSources = agora.protocolSources as string[];
    route = 'protocol';
  }
  const step: JsonObject = { agent: deps.name, timestamp: new Date(deps.now()).toISOString(), path: route };
  let result: JsonValue;
  try {
    result = (await ask(deps.receiver, deps.sessions, question, request.signal ? { signal: request.signal } : undefined)).body;
    step.status = 'ok';
  } catch (error) {
    if (!isAgoraError(error)) deps.logger.error(`OAP /invoke: ${describeError(error)}`);
    const message = isAgoraError(error) ? error.message : 'Internal error';
    result = { error: message };
    step.status = 'error';
    step.error = message;
  }
  step.result = result;
  const reply: JsonObject = { ...(envelope as JsonObject), memory: { ...memory, last_result: result }, steps: [...(steps as JsonValue[]), step] };
  const next = nextAgent(result);
  if (next !== undefined) reply.handoff = { ...(isObject(envelope.handoff) ? envelope.handoff : {}), next_agent: next };
  return deps.json(200, reply);
}
