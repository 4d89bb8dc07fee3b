// One hop of a chain: a query to an agent of the directory through the client of its kind (Agora `POST /`, else its
// binding's peer client: OAP `POST /invoke`, ROAR `POST /roar/message`, A2A's own client…), bounded in time and size;
// its reply parsed (never trusted), its result and the handoff it names read by the rules of its protocol.
import { parseUsage, USAGE_HEADER, type TurnUsage } from '../_usage.js';
import { AgoraError, isAgoraError } from '../errors.js';
import { peerResponseSchema, type JsonValue } from '../schemas.js';
import { chainReply, chainText, type ChainReply } from '../bindings/chain.js';
import { peerClient } from '../bindings/peers.js';
import type { GuardOptions } from '../net/guard.js';
import type { TokenSource } from '../net/token-source.js';
import { PeerTransport } from '../sender/transport.js';
import type { AgentProtocol, AgentRecord, Hop } from './records.js';
import { replyShapeOf, shapeMismatch } from './reply-shape.js';

/** What a hop sends: the goal, what the previous hop answered, and the chain's finished hops (oldest first). */
export type HopInput = { runId: string; goal: string; input?: JsonValue; done: readonly Hop[] };

/** What a hop got back: the result, the next agent when the reply names one, the LLM usage the agent reported. */
export type HopOutput = ChainReply & { usage?: TurnUsage };

/**
 * Bounds of one hop, the secret ROAR messages are signed with (else a fresh Ed25519 key), and the address guard every
 * connection of the hop goes through (at each connect and redirect; none: the plain fetch).
 */
export type HopLimits = {
  timeoutMs: number;
  maxReplyBytes: number;
  roarSecret?: string;
  guard?: GuardOptions;
  /** Where the hop's bearer token comes from (sent to the agent's origin only). */
  tokenSource?: TokenSource;
};

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
  return chainText(hop);
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
  if (agent.kind === 'agora') return agoraHop(agent, protocol, hop, limits, documentText);
  const client = peerClient(agent.kind, {
    timeoutMs: limits.timeoutMs,
    maxReplyBytes: limits.maxReplyBytes,
    ...(limits.guard ? { guard: limits.guard } : {}),
    ...(limits.tokenSource ? { tokenSource: limits.tokenSource } : {}),
    ...(limits.roarSecret ? { secret: limits.roarSecret } : {}),
  });
  return bounded(() => client.hop(agent.url, hop));
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
    const transport = new PeerTransport({
      timeoutMs: limits.timeoutMs,
      ...(limits.guard ? { guard: limits.guard } : {}),
      ...(limits.tokenSource ? { tokenSource: limits.tokenSource } : {}),
    });
    const response = await transport.exchange('POST', url, request, undefined, limits.maxReplyBytes);
    const json = transport.parseJson('POST', url, response);
    const parsed = peerResponseSchema.safeParse(json);
    if (!parsed.success || parsed.data.status !== 'success')
      throw transport.peerError('POST', url, response.status, json);
    return { body: (parsed.data.body ?? null) as JsonValue, usage: parseUsage(response.headers.get(USAGE_HEADER)) };
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
  return { ...chainReply(reply.body), ...(reply.usage ? { usage: reply.usage } : {}) };
}
