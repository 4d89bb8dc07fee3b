// One hop of a chain: a query to an agent of the directory (Agora `POST /`, or OAP `POST /invoke`), its reply
// parsed (never trusted) and the handoff it names, if any.
import { z } from 'zod';
import { AgoraError, describeError } from '../errors.js';
import type { JsonValue } from '../schemas.js';
import type { AgentProtocol, AgentRecord } from './records.js';

/** What a hop sends: the goal, and what the previous hop answered. */
export type HopInput = { runId: string; goal: string; input?: JsonValue; steps: string[] };

/** What a hop got back: the result, and the next agent when the reply names one. */
export type HopOutput = { result: JsonValue; handoff?: { target: string; goal?: string } };

/** Bounds of one hop. */
export type HopLimits = { timeoutMs: number; maxReplyBytes: number };

const agoraReplySchema = z.union([
  z.object({ status: z.literal('success'), body: z.custom<JsonValue>((value) => value !== undefined) }).loose(),
  z.object({ status: z.literal('failure'), error: z.string() }).loose(),
  // The Python SDK's failure shape.
  z.object({ status: z.literal('error'), message: z.string() }).loose(),
]);

const handoffSchema = z.object({
  next_agent: z.string().min(1).max(2000),
  goal: z.string().max(4000).optional(),
  task: z.string().max(4000).optional(),
});

const oapEnvelopeSchema = z
  .object({
    memory: z.record(z.string(), z.unknown()).optional(),
    result: z.unknown().optional(),
    handoff: z.unknown().optional(),
  })
  .loose();

/** The handoff a reply names: `handoff.next_agent` in a JSON object body (`handoff.goal` may narrow the goal). */
export function handoffOf(body: unknown): HopOutput['handoff'] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const parsed = handoffSchema.safeParse((body as Record<string, unknown>).handoff);
  if (!parsed.success) return undefined;
  const goal = parsed.data.goal ?? parsed.data.task;
  return { target: parsed.data.next_agent, ...(goal ? { goal } : {}) };
}

async function postJson(url: string, payload: unknown, limits: HopLimits): Promise<{ status: number; json: unknown }> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(payload),
      redirect: 'error',
      signal: AbortSignal.timeout(limits.timeoutMs),
    });
  } catch (error) {
    const reason = error instanceof Error && error.name === 'TimeoutError' ? `no answer within ${limits.timeoutMs} ms` : describeError(error);
    throw new AgoraError('PEER_FAILURE', `POST ${url} failed: ${reason}`, { cause: error });
  }
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limits.maxReplyBytes) {
    await response.body?.cancel();
    throw new AgoraError('PEER_FAILURE', `POST ${url}: reply larger than ${limits.maxReplyBytes} bytes`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body ?? []) {
      size += chunk.byteLength;
      if (size > limits.maxReplyBytes) throw new AgoraError('PEER_FAILURE', `POST ${url}: reply larger than ${limits.maxReplyBytes} bytes`);
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof AgoraError) throw error;
    throw new AgoraError('PEER_FAILURE', `POST ${url}: reply cut off: ${describeError(error)}`, { cause: error });
  }
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return { status: response.status, json: JSON.parse(text) as unknown };
  } catch {
    throw new AgoraError('PEER_FAILURE', `POST ${url}: HTTP ${response.status}, not JSON: ${JSON.stringify(text.slice(0, 120))}`);
  }
}

/** The body sent to an Agora agent: `{goal, input}` under a protocol, else natural language. */
function agoraBody(hop: HopInput, protocol: AgentProtocol | undefined): JsonValue {
  if (protocol !== undefined) return { goal: hop.goal, input: hop.input ?? null };
  if (hop.input === undefined || hop.input === null) return hop.goal;
  return `${hop.goal}\n\nWhat the previous agent found:\n${typeof hop.input === 'string' ? hop.input : JSON.stringify(hop.input)}`;
}

/**
 * Queries one agent for one hop; throws AgoraError('PEER_FAILURE') when it is unreachable, slow, answers
 * garbage or a failure.
 */
export async function queryAgent(agent: AgentRecord, protocol: AgentProtocol | undefined, hop: HopInput, limits: HopLimits): Promise<HopOutput> {
  if (agent.kind === 'oap') {
    const envelope = { id: hop.runId, goal: hop.goal, memory: { last_result: hop.input ?? null }, steps: hop.steps, handoff: null };
    const { status, json } = await postJson(`${agent.url}/invoke`, envelope, limits);
    // An OAP failure is an HTTP error whose body may well parse as an (empty) envelope: never a result.
    if (status < 200 || status > 299) {
      const reason = typeof json === 'object' && json !== null && typeof (json as { error?: unknown }).error === 'string' ? `: ${(json as { error: string }).error.slice(0, 300)}` : '';
      throw new AgoraError('PEER_FAILURE', `POST ${agent.url}/invoke: HTTP ${status}${reason}`, { status });
    }
    const parsed = oapEnvelopeSchema.safeParse(json);
    if (!parsed.success) throw new AgoraError('PEER_FAILURE', `POST ${agent.url}/invoke: not an OAP envelope`);
    const result = (parsed.data.memory?.last_result ?? parsed.data.result ?? null) as JsonValue;
    const handoff = handoffOf(parsed.data);
    return { result, ...(handoff ? { handoff } : {}) };
  }
  const request: Record<string, JsonValue> = { body: agoraBody(hop, protocol) };
  if (protocol !== undefined) {
    request.protocolHash = protocol.hash;
    request.protocolSources = [`${agent.url}/protocols/${protocol.hash}`];
  }
  const parsed = agoraReplySchema.safeParse((await postJson(`${agent.url}/`, request, limits)).json);
  if (!parsed.success) throw new AgoraError('PEER_FAILURE', `POST ${agent.url}/: not an Agora reply`);
  const reply = parsed.data;
  if (reply.status === 'failure') throw new AgoraError('PEER_FAILURE', `${agent.name} answered a failure: ${reply.error.slice(0, 300)}`);
  if (reply.status === 'error') throw new AgoraError('PEER_FAILURE', `${agent.name} answered a failure: ${reply.message.slice(0, 300)}`);
  const handoff = handoffOf(reply.body);
  return { result: reply.body, ...(handoff ? { handoff } : {}) };
}
