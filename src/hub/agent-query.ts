// One hop of a chain: a query to an agent of the directory through the client of its kind (Agora `POST /`, OAP
// `POST /invoke`, ROAR `POST /roar/message`, A2A's own client), bounded in time and size; its reply parsed (never
// trusted), its result and the handoff it names read by the rules of its protocol.
import { AgoraError, isAgoraError } from '../errors.js';
import { peerResponseSchema, type JsonValue } from '../schemas.js';
import { A2aClient } from '../sender/peers/a2a.js';
import { OapClient, readHandoff } from '../sender/peers/oap.js';
import { oapEnvelope, oapStep } from '../sender/peers/oap-envelope.js';
import { RoarClient } from '../sender/peers/roar.js';
import { PeerTransport } from '../sender/transport.js';
import type { AgentProtocol, AgentRecord, Hop } from './records.js';
import { replyShapeOf, shapeMismatch } from './reply-shape.js';

/** What a hop sends: the goal, what the previous hop answered, and the chain's finished hops (oldest first). */
export type HopInput = { runId: string; goal: string; input?: JsonValue; done: readonly Hop[] };

/** What a hop got back: the result, and the next agent when the reply names one. */
export type HopOutput = { result: JsonValue; handoff?: { target: string; goal?: string } };

/** Bounds of one hop, and the secret ROAR messages are signed with (else a fresh Ed25519 key). */
export type HopLimits = { timeoutMs: number; maxReplyBytes: number; roarSecret?: string };

/** The handoff a reply names: `handoff.next_agent` in a JSON object body (`handoff.goal` may narrow the goal). */
export function handoffOf(body: unknown): HopOutput['handoff'] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const handoff = readHandoff((body as Record<string, unknown>).handoff);
  return handoff === undefined
    ? undefined
    : { target: handoff.next_agent, ...(handoff.goal ? { goal: handoff.goal } : {}) };
}

/** Whether a reply body is a protocol-level error: an object whose `error` is a non-empty string, beside no result. */
export function isProtocolError(body: JsonValue): boolean {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const error = (body as Record<string, JsonValue>).error;
  return typeof error === 'string' && error !== '' && !('result' in body);
}

/** Runs a hop's exchange; a timeout is a peer's failure here (a hop recorded as failed). */
async function bounded<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (isAgoraError(error) && error.code === 'TIMEOUT')
      throw new AgoraError('PEER_FAILURE', error.message, { cause: error });
    throw error;
  }
}

/** The body sent to an Agora agent: `{goal, input}` under a protocol, else natural language. */
function agoraBody(hop: HopInput, protocol: AgentProtocol | undefined): JsonValue {
  if (protocol !== undefined) return { goal: hop.goal, input: hop.input ?? null };
  return naturalLanguage(hop);
}

/** The goal, with what the previous agent found, as one text (what a ROAR or A2A agent reads). */
function naturalLanguage(hop: HopInput): string {
  if (hop.input === undefined || hop.input === null) return hop.goal;
  return `${hop.goal}\n\nWhat the previous agent found:\n${typeof hop.input === 'string' ? hop.input : JSON.stringify(hop.input)}`;
}

/** A result and the handoff it names, if any. */
function output(result: JsonValue, handoff = handoffOf(result)): HopOutput {
  return { result, ...(handoff ? { handoff } : {}) };
}

/**
 * Queries one agent for one hop through the client of its kind; throws AgoraError('PEER_FAILURE') when it is
 * unreachable, slow, answers garbage, a failure, or (under a protocol) a reply its document does not allow.
 */
export async function queryAgent(
  agent: AgentRecord,
  protocol: AgentProtocol | undefined,
  hop: HopInput,
  limits: HopLimits,
  documentText?: string,
): Promise<HopOutput> {
  const options = { timeoutMs: limits.timeoutMs, maxReplyBytes: limits.maxReplyBytes };
  switch (agent.kind) {
    case 'oap': {
      // OAP's rules: a full TaskEnvelope (the chain's id, the previous result as memory, a Step per finished hop), and
      // the reply's `result` winning over `memory.last_result`; the chain stops when the reply sets no handoff. Every
      // finished hop before this one handed the chain on: a hop that named no next agent would have ended it.
      const steps = hop.done.map((done) => oapStep(done.agentName, 'handed off', done.result ?? null, done.finishedAt));
      const envelope = oapEnvelope({ id: hop.runId, goal: hop.goal, input: hop.input ?? null, stepsTaken: steps });
      const reply = await bounded(() => new OapClient(options).invoke(agent.url, envelope));
      return output(
        reply.result,
        reply.handoff
          ? { target: reply.handoff.next_agent, ...(reply.handoff.goal ? { goal: reply.handoff.goal } : {}) }
          : undefined,
      );
    }
    case 'roar': {
      // ROAR's answer is the `respond` message's `payload.result`; a handoff is named in it, or beside it in the payload.
      const answer = await bounded(() =>
        new RoarClient({ ...options, ...(limits.roarSecret ? { secret: limits.roarSecret } : {}) }).ask(agent.url, {
          body: naturalLanguage(hop),
        }),
      );
      return output(answer.result, handoffOf(answer.result) ?? handoffOf(answer.reply.payload));
    }
    case 'a2a': {
      // A2A's answer is the completed task's artifacts (or the agent's message); any other end state failed the hop.
      const answer = await bounded(() =>
        new A2aClient({ ...options, sameOrigin: true }).send(agent.url, { body: naturalLanguage(hop) }),
      );
      if (answer.state !== 'completed')
        throw new AgoraError(
          'PEER_FAILURE',
          `A2A task ${answer.taskId ?? ''} at ${agent.url}: ${answer.state}, not completed`,
        );
      return output(answer.result);
    }
    default:
      return agoraHop(agent, protocol, hop, limits, documentText);
  }
}

async function agoraHop(
  agent: AgentRecord,
  protocol: AgentProtocol | undefined,
  hop: HopInput,
  limits: HopLimits,
  documentText: string | undefined,
): Promise<HopOutput> {
  const request: Record<string, JsonValue> = { body: agoraBody(hop, protocol) };
  if (protocol !== undefined) {
    request.protocolHash = protocol.hash;
    request.protocolSources = [`${agent.url}/protocols/${protocol.hash}`];
  }
  // A failure reply, or one that is not an Agora reply, is the transport's PEER_FAILURE naming the URL.
  const url = `${agent.url}/`;
  const reply = await bounded(async () => {
    const transport = new PeerTransport({ timeoutMs: limits.timeoutMs });
    const response = await transport.exchange('POST', url, request, undefined, limits.maxReplyBytes);
    const json = transport.parseJson('POST', url, response);
    const parsed = peerResponseSchema.safeParse(json);
    if (!parsed.success || parsed.data.status !== 'success')
      throw transport.peerError('POST', url, response.status, json);
    return { body: (parsed.data.body ?? null) as JsonValue };
  });
  // Under a protocol, `{"error": …}` is the protocol's own way to refuse (the spec's documents define it so): a failed
  // hop, recorded in fixed words (the agent's text is not copied into the checkpoint others read).
  if (protocol !== undefined && isProtocolError(reply.body))
    throw new AgoraError(
      'PEER_FAILURE',
      `POST ${url}: the agent refused the query under ${JSON.stringify(protocol.name.slice(0, 100))} (a protocol-level error)`,
    );
  // A reply the document's reply shape does not allow is no answer either (issue 28: chains tell the truth).
  const shape = documentText === undefined ? undefined : replyShapeOf(documentText);
  const mismatch = shape === undefined ? undefined : shapeMismatch(shape, reply.body);
  if (protocol !== undefined && mismatch !== undefined)
    throw new AgoraError(
      'PEER_FAILURE',
      `POST ${url}: the reply does not match ${JSON.stringify(protocol.name.slice(0, 100))}'s reply (${mismatch})`,
    );
  return output(reply.body);
}
