// OAP's `POST /invoke`: a TaskEnvelope in, the same envelope back with the answer in `memory.last_result`, a Step of
// this agent appended to `steps_taken`, and a `handoff {next_agent, reason}` only when the answer names a next agent.
// The reply passes OAP's `TaskEnvelope.model_validate` (`oap/envelope.py`): an envelope that model would refuse is
// refused here (422), and the bare agent names our earlier versions wrote as steps are written back as Steps.
import { describeError, isAgoraError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { ReceiverApi } from '../../receiver.js';
import type { JsonObject, JsonValue } from '../../schemas.js';
import type { MountedRequest } from '../../edge/mount.js';
import type { EdgeResponse } from '../../edge/response.js';
import { oapConstraintsSchema, oapStep, readOapStep, type OapStep } from './envelope.js';
import { ask, type Ask } from '../../faces/ask.js';
import { isBadBody, isTooLarge, readBodyText } from '../../faces/body.js';

/** What `POST /invoke` works with. */
export type OapInvokeDeps = {
  receiver: ReceiverApi;
  name: string;
  maxBodyBytes: number;
  logger: Pick<Logger, 'error'>;
  /** Clock in Unix milliseconds (the Step's timestamp). */
  now: () => number;
  /** OAP's error body `{error, detail}`. */
  failure(status: number, error: string, detail: string): EdgeResponse;
  json(status: number, value: unknown): EdgeResponse;
};

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The handoff an answer asks for (`next_agent`, or `handoff: {next_agent, reason}`), with OAP's required `reason`. */
function handoffOf(body: JsonValue, agent: string): JsonObject | null {
  if (!isObject(body)) return null;
  const handoff = isObject(body.handoff) ? body.handoff : body;
  const next = handoff.next_agent;
  if (typeof next !== 'string' || next.trim() === '') return null;
  const reason =
    typeof handoff.reason === 'string' && handoff.reason.trim() !== '' ? handoff.reason : `${agent} handed the task on`;
  return { next_agent: next, reason };
}

/** The envelope's steps as Steps, or the detail of the first that is neither a Step nor an agent's name. */
function stepsOf(value: unknown[]): OapStep[] | string {
  const steps: OapStep[] = [];
  for (const [index, item] of value.entries()) {
    const step = readOapStep(item);
    if (step === undefined)
      return `steps_taken[${index}] must be a step {agent_id, action, result, timestamp} (strings; timestamp ISO 8601) or an agent's name`;
    steps.push(step);
  }
  return steps;
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
    if (isBadBody(error)) return failure(400, 'invalid_envelope', error.message);
    return failure(400, 'invalid_envelope', 'The body must be a JSON TaskEnvelope');
  }
  if (!isObject(envelope)) return failure(400, 'invalid_envelope', 'The body must be a JSON TaskEnvelope');
  const { goal } = envelope;
  const memory = envelope.memory ?? {};
  const stepsTaken = envelope.steps_taken ?? [];
  if (typeof goal !== 'string' || goal.trim() === '')
    return failure(422, 'invalid_envelope', 'goal must be a non-empty string');
  if (!isObject(memory)) return failure(422, 'invalid_envelope', 'memory must be an object');
  if (!Array.isArray(stepsTaken)) return failure(422, 'invalid_envelope', 'steps_taken must be an array');
  const steps = stepsOf(stepsTaken);
  if (typeof steps === 'string') return failure(422, 'invalid_envelope', steps);
  for (const field of ['id', 'version'] as const)
    if (envelope[field] !== undefined && typeof envelope[field] !== 'string')
      return failure(422, 'invalid_envelope', `${field} must be a string`);
  const { constraints } = envelope;
  if (constraints !== undefined && constraints !== null && !isObject(constraints))
    return failure(422, 'invalid_envelope', 'constraints must be an object');
  if (isObject(constraints) && !oapConstraintsSchema.safeParse(constraints).success)
    return failure(
      422,
      'invalid_envelope',
      'constraints: max_cost_usd must be a number, allowed_tools a list of strings, deadline_ms an integer',
    );
  if (envelope.handoff !== undefined && envelope.handoff !== null && !isObject(envelope.handoff))
    return failure(422, 'invalid_envelope', 'handoff must be an object');
  const agora = memory.agora;
  let question: Ask = { body: goal };
  if (isObject(agora) && typeof agora.protocolHash === 'string') {
    if (agora.body === undefined) return failure(422, 'invalid_envelope', 'memory.agora needs protocolHash and body');
    question = { protocolHash: agora.protocolHash, body: agora.body };
    if (Array.isArray(agora.protocolSources) && agora.protocolSources.every((source) => typeof source === 'string'))
      question.protocolSources = agora.protocolSources as string[];
  }
  let result: JsonValue;
  let handoff: JsonObject | null = null;
  let action = 'answered';
  try {
    result = (await ask(deps.receiver, undefined, question, request.signal ? { signal: request.signal } : undefined))
      .body;
    handoff = handoffOf(result, deps.name);
    if (handoff !== null) action = 'handed off';
  } catch (error) {
    if (!isAgoraError(error)) deps.logger.error(`OAP /invoke: ${describeError(error)}`);
    result = { error: isAgoraError(error) ? error.message : 'Internal error' };
    action = 'failed';
  }
  // The envelope as it came (unknown fields kept), our Step appended (its result bounded: the whole answer is in
  // `memory.last_result`), a null `constraints` (which OAP's model refuses) written as none. The incoming handoff
  // is spent: `null` unless our answer names a next agent, so the chain stops with us.
  const reply: JsonObject = {
    ...envelope,
    memory: { ...memory, last_result: result },
    steps_taken: [...steps, oapStep(deps.name, action, result, deps.now())],
    ...(constraints === null ? { constraints: {} } : {}),
    handoff,
  };
  return deps.json(200, reply);
}
