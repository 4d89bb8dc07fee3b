// What a binding is: everything of one foreign protocol (ROAR, A2A, OAP, MCP…) on both sides, in one folder. Its face
// lets that protocol's clients reach our agent; its peer client lets us reach that protocol's agents; its probes tell
// its agents apart from others. A new protocol is one folder exporting one `Binding`, and one line in `BINDINGS`.
import type { FaceDefinition } from '../faces/face.js';
import type { ProtocolDocument } from '../protocol/document.js';
import type { JsonValue } from '../schemas.js';
import type { SenderStreamEvent } from '../sender/stream.js';
import type { QueryResult, TransportOptions } from '../sender/transport.js';
import type { ChainReply, ChainStep } from './chain.js';

/** One query to a foreign agent: a body, a protocol document to query under, a conversation to continue. */
export type PeerQuery = { body: JsonValue; protocol?: ProtocolDocument; conversationId?: string };

/** Options of a peer client: the outbound transport's, and what some protocols add. */
export type PeerOptions = TransportOptions & {
  /** The HMAC secret a signing protocol signs with (ROAR; else a fresh Ed25519 key). */
  secret?: string;
  /**
   * Origins beyond the agent's own that its card may send requests (and the token) to (`agora send --allow-origin`);
   * by default a card naming another origin is refused and nothing is sent there.
   */
  allowOrigins?: readonly string[];
};

/** A client of one protocol, for one caller: what it keeps (a ROAR identity) lasts as long as it. */
export interface PeerClient {
  /** One query, read back as the sender's QueryResult (`conversationId`: the protocol's session or context). */
  ask(url: string, query: PeerQuery, signal?: AbortSignal): Promise<QueryResult>;
  /** A query streamed where the protocol streams; absent when it answers whole. */
  stream?(url: string, query: PeerQuery, signal?: AbortSignal): AsyncIterable<SenderStreamEvent>;
  /** One hop of a hub's chain, by the protocol's own rules for results and handoffs. */
  hop(url: string, step: ChainStep): Promise<ChainReply>;
}

/** What an agent's answer at a probe's path says of it. */
export type Recognition = {
  /** Whether the answer shows the agent speaks this protocol (else it only describes the agent). */
  speaks: boolean;
  name?: string;
  description?: string;
  /** Its capabilities, counted when the agent is of this binding's kind. */
  capabilities?: readonly string[];
  /** Capabilities it announces whatever the agent's kind (OAP's `GET /`, a ROAR card's own list). */
  announced?: readonly string[];
};

/** A path that tells this protocol's agents apart: a GET of JSON, read by `read`. */
export type Probe = {
  /** Tried in this order across every binding, after the Agora `/wellknown`; lower first. */
  order: number;
  path: string;
  headers?: Readonly<Record<string, string>>;
  /** Read only when no other probe recognised the agent (ROAR's card-less `/roar/health`): others pay nothing. */
  fallback?: boolean;
  /** What the JSON says of the agent; undefined when it is not this protocol's answer. */
  read(json: unknown): Recognition | undefined;
};

/** One foreign protocol on both sides. */
export type Binding<Name extends string = string, Options = never> = {
  readonly name: Name;
  /** Its face: how its clients reach our agent (`--faces` names it). */
  readonly face: FaceDefinition<Options, Name>;
  /** How its agents are recognised (`detectPeerKind`, the hub's reading of an agent). */
  readonly probes?: readonly Probe[];
  /** Its client, made per caller; absent when we do not ask its agents (MCP's client side is `agora mcp`). */
  readonly peer?: (options: PeerOptions) => PeerClient;
};

/** A protocol client's streamed pieces as the sender's events: the deltas, then the answer as a QueryResult. */
export async function* senderEvents<Answer>(
  pieces: AsyncIterable<{ type: 'delta'; delta: JsonValue } | { type: 'done'; answer: Answer }>,
  resultOf: (answer: Answer) => QueryResult,
): AsyncGenerator<SenderStreamEvent> {
  for await (const piece of pieces) {
    if (piece.type === 'delta') yield piece;
    else yield { type: 'done', result: resultOf(piece.answer) };
  }
}

/** The JSON fields of an object, or undefined for anything else. */
export function fieldsOf(json: unknown): Record<string, unknown> | undefined {
  return typeof json === 'object' && json !== null && !Array.isArray(json)
    ? (json as Record<string, unknown>)
    : undefined;
}
