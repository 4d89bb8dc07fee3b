// One hop of a chain: a query to an agent of the directory (Agora `POST /`, or OAP `POST /invoke`) over the sender's
// transport (bounded in time and size), its reply parsed (never trusted) and the handoff it names, if any.
import { z } from 'zod';
import { AgoraError, isAgoraError } from '../errors.js';
import { peerResponseSchema, type JsonValue } from '../schemas.js';
import { PeerTransport } from '../sender/transport.js';
import type { AgentProtocol, AgentRecord } from './records.js';

/** What a hop sends: the goal, and what the previous hop answered. */
export type HopInput = { runId: string; goal: string; input?: JsonValue; steps: string[] };

/** What a hop got back: the result, and the next agent when the reply names one. */
export type HopOutput = { result: JsonValue; handoff?: { target: string; goal?: string } };

/** Bounds of one hop. */
export type HopLimits = { timeoutMs: number; maxReplyBytes: number };

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

/** Whether a reply body is a protocol-level error: an object whose `error` is a non-empty string, beside no result. */
export function isProtocolError(body: JsonValue): boolean {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const error = (body as Record<string, JsonValue>).error;
  return typeof error === 'string' && error !== '' && !('result' in body);
}

/** The sender's transport, bounded by a hop's limits; its timeout is a peer's failure here (a hop recorded as failed). */
async function exchange<T>(limits: HopLimits, run: (transport: PeerTransport) => Promise<T>): Promise<T> {
  try {
    return await run(new PeerTransport({ timeoutMs: limits.timeoutMs }));
  } catch (error) {
    if (isAgoraError(error) && error.code === 'TIMEOUT') throw new AgoraError('PEER_FAILURE', error.message, { cause: error });
    throw error;
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
    const url = `${agent.url}/invoke`;
    const { status, json } = await exchange(limits, async (transport) => {
      const response = await transport.exchange('POST', url, envelope, undefined, limits.maxReplyBytes);
      return { status: response.status, json: transport.parseJson('POST', url, response) };
    });
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
  // A failure reply, or one that is not an Agora reply, is the transport's PEER_FAILURE naming the URL.
  const url = `${agent.url}/`;
  const reply = await exchange(limits, async (transport) => {
    const response = await transport.exchange('POST', url, request, undefined, limits.maxReplyBytes);
    const json = transport.parseJson('POST', url, response);
    const parsed = peerResponseSchema.safeParse(json);
    if (!parsed.success || parsed.data.status !== 'success') throw transport.peerError('POST', url, response.status, json);
    return { body: (parsed.data.body ?? null) as JsonValue };
  });
  // Under a protocol, `{"error": …}` is the protocol's own way to refuse (the spec's documents define it so): a failed
  // hop, recorded in fixed words (the agent's text is not copied into the checkpoint others read).
  if (protocol !== undefined && isProtocolError(reply.body)) throw new AgoraError('PEER_FAILURE', `POST ${url}: the agent refused the query under ${JSON.stringify(protocol.name.slice(0, 100))} (a protocol-level error)`);
  const handoff = handoffOf(reply.body);
  return { result: reply.body, ...(handoff ? { handoff } : {}) };
}
