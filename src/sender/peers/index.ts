// One way to ask an agent whatever it speaks: which protocol an agent serves (from what it answers), and a query or a
// conversation through the client of that protocol, read back as the sender's QueryResult. `agora send --as` uses it.
import { AgoraError, isAgoraError } from '../../errors.js';
import type { ProtocolDocument } from '../../protocol/document.js';
import type { JsonObject, JsonValue } from '../../schemas.js';
import type { SenderStreamEvent } from '../stream.js';
import { agentBaseUrl, getJson, PeerTransport, type QueryResult, type TransportOptions } from '../transport.js';
import { A2aClient } from './a2a.js';
import { OapClient } from './oap.js';
import { oapEnvelope } from './oap-envelope.js';
import { isRoarHealth, RoarClient, type RoarClientOptions } from './roar.js';

export { A2aClient, type A2aAnswer, type A2aClientOptions, type A2aMessage, type A2aStreamPiece } from './a2a.js';
export { OapClient, type OapInfo, type OapReply } from './oap.js';
export {
  OAP_ENVELOPE_VERSION,
  oapEnvelope,
  oapStep,
  type OapEnvelope,
  type OapHandoff,
  type OapStep,
} from './oap-envelope.js';
export {
  cardlessAddress,
  RoarClient,
  type RoarAnswer,
  type RoarCard,
  type RoarClientOptions,
  type RoarReply,
  type RoarSelf,
  type RoarStreamEvent,
} from './roar.js';

/** The protocols an agent may speak to us. */
export type PeerKind = 'agora' | 'roar' | 'a2a' | 'oap';

/** The protocols {@link askPeer} speaks (Agora has the `Sender`). */
export type ForeignKind = Exclude<PeerKind, 'agora'>;

/** What one query to a foreign agent carries: a body, a protocol document to query under, a conversation to continue. */
export type PeerQuery = { body: JsonValue; protocol?: ProtocolDocument; conversationId?: string };

/** Options of {@link askPeer}, {@link streamPeer} and {@link detectPeerKind}. */
export type PeerOptions = TransportOptions & Pick<RoarClientOptions, 'secret'>;

/**
 * Which protocol an agent speaks, from what it serves: `/wellknown` (Agora), `/roar/card` (ROAR),
 * `/.well-known/agent-card.json` (A2A), `GET /` (OAP), then `/roar/health` answering `protocol: "roar/…"` (a ROAR
 * agent without a card, as ROAR's own router serves); undefined when it serves none of them. The probes go one after
 * another, the card-less ROAR one last: the kinds found before it cost no more than before.
 */
export async function detectPeerKind(url: string, options: PeerOptions = {}): Promise<PeerKind | undefined> {
  const base = agentBaseUrl(url);
  const transport = new PeerTransport(options);
  const probe = async (path: string, fits: (json: Record<string, unknown>) => boolean): Promise<boolean> => {
    try {
      const json = await getJson(transport, `${base}${path}`, { retries: 0, maxBytes: 256 * 1024 });
      return typeof json === 'object' && json !== null && !Array.isArray(json) && fits(json as Record<string, unknown>);
    } catch (error) {
      if (
        isAgoraError(error) &&
        error.code === 'PEER_FAILURE' &&
        error.status === undefined &&
        !/not JSON/.test(error.message)
      )
        throw error;
      return false;
    }
  };
  if (await probe('/wellknown', (json) => Object.values(json).every(Array.isArray))) return 'agora';
  if (await probe('/roar/card', (json) => typeof (json.identity as { did?: unknown } | undefined)?.did === 'string'))
    return 'roar';
  if (await probe('/.well-known/agent-card.json', (json) => typeof json.name === 'string')) return 'a2a';
  if (await probe('/', (json) => typeof json.agent_id === 'string' || Array.isArray(json.capabilities))) return 'oap';
  if (await probe('/roar/health', isRoarHealth)) return 'roar';
  return undefined;
}

/** A query's body as text, for protocols that take natural language. */
function textOf(body: JsonValue): string {
  return typeof body === 'string' ? body : JSON.stringify(body);
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
  return askWith(new PeerClients(options), kind, url, query, signal);
}

/** The clients of one caller, each made when first needed (a ROAR client keeps one identity: its sessions are its own). */
class PeerClients {
  #roar: RoarClient | undefined;
  #a2a: A2aClient | undefined;
  constructor(readonly options: PeerOptions) {}
  get roar(): RoarClient {
    return (this.#roar ??= new RoarClient(this.options));
  }
  get a2a(): A2aClient {
    return (this.#a2a ??= new A2aClient(this.options));
  }
}

async function askWith(
  clients: PeerClients,
  kind: ForeignKind,
  url: string,
  query: PeerQuery,
  signal?: AbortSignal,
): Promise<QueryResult> {
  const protocol = query.protocol;
  const { options } = clients;
  switch (kind) {
    case 'roar': {
      const answer = await clients.roar.ask(
        url,
        {
          body: query.body,
          ...(protocol ? { protocolHash: protocol.hash } : {}),
          ...(query.conversationId ? { sessionId: query.conversationId } : {}),
        },
        signal,
      );
      return { body: answer.result, ...(answer.sessionId ? { conversationId: answer.sessionId } : {}) };
    }
    case 'a2a': {
      const body: JsonValue = protocol ? { protocolHash: protocol.hash, body: query.body } : query.body;
      const answer = await clients.a2a.send(
        url,
        { body, ...(query.conversationId ? { contextId: query.conversationId } : {}) },
        signal,
      );
      if (answer.state !== 'completed')
        throw new AgoraError(
          'PEER_FAILURE',
          `A2A task ${answer.taskId ?? ''} at ${agentBaseUrl(url)}: ${answer.state}`,
        );
      return { body: answer.result, ...(answer.contextId ? { conversationId: answer.contextId } : {}) };
    }
    case 'oap': {
      const memory: JsonObject = protocol ? { agora: { protocolHash: protocol.hash, body: query.body } } : {};
      const reply = await new OapClient(options).invoke(url, oapEnvelope({ goal: textOf(query.body), memory }), signal);
      return { body: reply.result };
    }
  }
}

/** A query streamed where the protocol streams (ROAR's WebSocket, A2A's message/stream); OAP answers whole. */
export async function* streamPeer(
  kind: ForeignKind,
  url: string,
  query: PeerQuery,
  options: PeerOptions = {},
  signal?: AbortSignal,
): AsyncGenerator<SenderStreamEvent> {
  if (kind === 'roar') {
    for await (const piece of new RoarClient(options).stream(
      url,
      { body: query.body, ...(query.protocol ? { protocolHash: query.protocol.hash } : {}) },
      signal,
    )) {
      if (piece.type === 'delta') yield piece;
      else
        yield {
          type: 'done',
          result: {
            body: piece.answer.result,
            ...(piece.answer.sessionId ? { conversationId: piece.answer.sessionId } : {}),
          },
        };
    }
    return;
  }
  if (kind === 'a2a') {
    const body: JsonValue = query.protocol ? { protocolHash: query.protocol.hash, body: query.body } : query.body;
    for await (const piece of new A2aClient(options).stream(url, { body }, signal)) {
      if (piece.type === 'delta') yield piece;
      else
        yield {
          type: 'done',
          result: {
            body: piece.answer.result,
            ...(piece.answer.contextId ? { conversationId: piece.answer.contextId } : {}),
          },
        };
    }
    return;
  }
  yield { type: 'done', result: await askPeer(kind, url, query, options, signal) };
}

/** A conversation with a ROAR agent (its session) or an A2A agent (its context); OAP has none, each turn stands alone. */
export function peerConversation(
  kind: ForeignKind,
  url: string,
  protocol: ProtocolDocument | undefined,
  options: PeerOptions = {},
): { send(body: JsonValue): Promise<QueryResult>; close(): Promise<void> } {
  let conversationId: string | undefined;
  const clients = new PeerClients(options);
  return {
    async send(body) {
      const result = await askWith(clients, kind, url, {
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
