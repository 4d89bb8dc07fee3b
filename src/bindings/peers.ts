// One way to ask an agent whatever it speaks: which protocol an agent serves (from what it answers, by the probes of
// `BINDINGS` in their order), and a query or a conversation through the peer client of that protocol, read back as
// the sender's QueryResult. `agora send --as` and the hub's rooms use it.
import { isAgoraError } from '../errors.js';
import type { ProtocolDocument } from '../protocol/document.js';
import type { JsonValue } from '../schemas.js';
import type { SenderStreamEvent } from '../sender/stream.js';
import { agentBaseUrl, getJson, PeerTransport, type QueryResult } from '../sender/transport.js';
import type { PeerClient, PeerOptions, PeerQuery } from './binding.js';
import { PEERS, PROBES, type ForeignKind, type PeerKind } from './index.js';

export type { PeerClient, PeerOptions, PeerQuery } from './binding.js';
export { PEER_KINDS, type ForeignKind, type PeerKind } from './index.js';
export {
  A2aClient,
  type A2aAnswer,
  type A2aClientOptions,
  type A2aMessage,
  type A2aStreamPiece,
} from './a2a/client.js';
export { OapClient, type OapInfo, type OapReply } from './oap/client.js';
export {
  OAP_ENVELOPE_VERSION,
  oapEnvelope,
  oapStep,
  type OapEnvelope,
  type OapHandoff,
  type OapStep,
} from './oap/envelope.js';
export {
  cardlessAddress,
  RoarClient,
  type RoarAnswer,
  type RoarCard,
  type RoarClientOptions,
  type RoarReply,
  type RoarSelf,
  type RoarStreamEvent,
} from './roar/client.js';

/** A new client of one kind for one caller. */
export function peerClient(kind: ForeignKind, options: PeerOptions = {}): PeerClient {
  return PEERS.get(kind)!.peer(options);
}

/**
 * Which protocol an agent speaks, from what it serves: `/wellknown` (Agora), then each binding's probes in their
 * order (`/roar/card`, `/.well-known/agent-card.json`, `GET /`, then `/roar/health` for a ROAR agent without a card);
 * undefined when it serves none of them. The probes go one after another: the kinds found early cost no more.
 */
export async function detectPeerKind(url: string, options: PeerOptions = {}): Promise<PeerKind | undefined> {
  const base = agentBaseUrl(url);
  const probe = async (path: string, headers: Readonly<Record<string, string>> | undefined): Promise<unknown> => {
    const transport = new PeerTransport(
      headers ? { ...options, headers: { ...options.headers, ...headers } } : options,
    );
    try {
      return await getJson(transport, `${base}${path}`, { retries: 0, maxBytes: 256 * 1024 });
    } catch (error) {
      // An agent that cannot be reached at all is no agent of any kind: said once, not probed further.
      if (
        isAgoraError(error) &&
        error.code === 'PEER_FAILURE' &&
        error.status === undefined &&
        !/not JSON/.test(error.message)
      )
        throw error;
      return undefined;
    }
  };
  const listing = await probe('/wellknown', undefined);
  if (isListing(listing)) return 'agora';
  for (const { path, headers, read, kind } of PROBES) {
    const json = await probe(path, headers);
    if (json !== undefined && read(json)?.speaks === true) return kind;
  }
  return undefined;
}

/** Whether a JSON answer is an Agora `/wellknown` listing (an object of source lists). */
function isListing(json: unknown): boolean {
  return typeof json === 'object' && json !== null && !Array.isArray(json) && Object.values(json).every(Array.isArray);
}

/**
 * One query to a ROAR, A2A or OAP agent through its client: under a protocol document, its hash and body go as
 * that protocol carries them (ROAR payload, A2A data part, OAP `memory.agora`); the reply reads as a QueryResult whose
 * `conversationId` is the ROAR session or A2A context to continue.
 * @example const { body } = await askPeer('roar', 'http://localhost:8089', { body: 'review this' }, { secret });
 */
export function askPeer(
  kind: ForeignKind,
  url: string,
  query: PeerQuery,
  options: PeerOptions = {},
  signal?: AbortSignal,
): Promise<QueryResult> {
  return peerClient(kind, options).ask(url, query, signal);
}

/** A query streamed where the protocol streams (ROAR's WebSocket, A2A's message/stream); others answer whole. */
export async function* streamPeer(
  kind: ForeignKind,
  url: string,
  query: PeerQuery,
  options: PeerOptions = {},
  signal?: AbortSignal,
): AsyncGenerator<SenderStreamEvent> {
  const client = peerClient(kind, options);
  if (client.stream) yield* client.stream(url, query, signal);
  else yield { type: 'done', result: await client.ask(url, query, signal) };
}

/** A conversation with a ROAR agent (its session) or an A2A agent (its context); an OAP turn stands alone. */
export function peerConversation(
  kind: ForeignKind,
  url: string,
  protocol: ProtocolDocument | undefined,
  options: PeerOptions = {},
): { send(body: JsonValue): Promise<QueryResult>; close(): Promise<void> } {
  let conversationId: string | undefined;
  const client = peerClient(kind, options);
  return {
    async send(body) {
      const result = await client.ask(url, {
        body,
        ...(protocol ? { protocol } : {}),
        ...(conversationId ? { conversationId } : {}),
      });
      conversationId = result.conversationId ?? conversationId;
      return result;
    },
    async close() {},
  };
}
