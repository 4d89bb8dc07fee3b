// Multiround conversations with a peer (spec §2): the first turn starts one, later turns go to
// `/conversations/:id`, a DELETE ends it; and the one-turn query a typed task makes.
import { AgoraError, describeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ProtocolDocument } from '../protocol/document.js';
import { toJsonValue, type JsonValue } from '../schemas.js';
import type { PeerFields, SenderDocuments } from './documents.js';
import { parsedReply, textBody } from './python.js';
import { isGone, type PeerTransport, type QueryResult } from './transport.js';

/** A multiround conversation with a peer: the first `send` starts it, `close` ends it (idempotent). */
export type SenderConversation = {
  /** The peer's conversation id, once the first turn is answered. */
  readonly id: string | undefined;
  send(body: unknown, options?: { signal?: AbortSignal }): Promise<QueryResult>;
  close(): Promise<void>;
};

/** One exchange with bodies as the peer reads them: text out and JSON text back for a Python-like peer (spec §7). */
async function exchange(
  transport: PeerTransport,
  url: string,
  peer: PeerFields,
  payload: Record<string, unknown> & { body: JsonValue },
  signal?: AbortSignal,
): Promise<QueryResult> {
  if (!peer.textBodies) return transport.post(url, { ...peer.fields, ...payload }, signal);
  const result = await transport.post(url, { ...peer.fields, ...payload, body: textBody(payload.body) }, signal);
  return { ...result, body: parsedReply(result.body) };
}

/**
 * Opens a conversation with the peer at `base`; `fieldsOf` gives the protocol fields, asked once on the first turn,
 * which goes to `firstUrl` (default `<base>/`).
 */
export function openConversation(
  transport: PeerTransport,
  base: string,
  fieldsOf: (signal?: AbortSignal) => Promise<PeerFields>,
  firstUrl = `${base}/`,
): SenderConversation {
  let id: string | undefined;
  let started = false;
  let closing: Promise<void> | undefined;
  let fields: Promise<PeerFields> | undefined;
  // Turns go one after the other: a second send while the first is under way must not start another conversation.
  let queue: Promise<unknown> = Promise.resolve();
  const turn = async (value: JsonValue, signal?: AbortSignal): Promise<QueryResult> => {
    fields ??= fieldsOf(signal);
    const protocol = await fields;
    if (!started) {
      // A first turn that fails starts nothing: the next send tries to start the conversation again.
      const result = await exchange(transport, firstUrl, protocol, { body: value, multiround: true }, signal);
      started = true;
      id = result.conversationId;
      return result;
    }
    if (id === undefined)
      throw new AgoraError(
        'PEER_FAILURE',
        `POST ${base}/: the peer started no conversation (no conversationId in its reply)`,
      );
    // The hash and sources are repeated: the Python receiver requires both on every request, ours accepts them.
    const result = await exchange(
      transport,
      `${base}/conversations/${encodeURIComponent(id)}`,
      protocol,
      { body: value },
      signal,
    );
    if (result.conversationId) id = result.conversationId;
    return result;
  };
  const end = async (): Promise<void> => {
    if (id === undefined) return;
    const url = `${base}/conversations/${encodeURIComponent(id)}`;
    const response = await transport.exchange('DELETE', url);
    // Any 2xx ends it, whatever the body says (an expired or already closed conversation is over all the same).
    if (response.status >= 200 && response.status < 300) return;
    let json: unknown;
    try {
      json = transport.parseJson('DELETE', url, response);
    } catch (error) {
      if (response.status === 404) return;
      throw error;
    }
    const error = transport.peerError('DELETE', url, response.status, json);
    if (!isGone(error)) throw error;
  };
  return {
    get id() {
      return id;
    },
    send: (body, options) => {
      if (closing) return Promise.reject(new AgoraError('BAD_REQUEST', `the conversation with ${base} is closed`));
      let value: JsonValue;
      try {
        value = toJsonValue(body, 'body');
      } catch (error) {
        return Promise.reject(error);
      }
      const next = queue.then(() => turn(value, options?.signal));
      queue = next.catch(() => undefined);
      return next;
    },
    close: () => {
      closing ??= queue.then(end);
      return closing;
    },
  };
}

/** The wire and documents a query needs. */
export type QueryParts = { transport: PeerTransport; documents: SenderDocuments; logger: Logger };

/** Sends one query (`POST /`, or to `url` when given) under a PD (or in natural language) and returns the peer's reply. */
export async function sendQuery(
  parts: QueryParts,
  base: string,
  options: {
    protocol?: ProtocolDocument | string | undefined;
    body: JsonValue;
    multiround?: boolean | undefined;
    signal?: AbortSignal | undefined;
  },
  url = `${base}/`,
): Promise<QueryResult> {
  const peer = await parts.documents.peerFields(base, options.protocol, options.signal);
  return exchange(
    parts.transport,
    url,
    peer,
    { body: options.body, ...(options.multiround ? { multiround: true } : {}) },
    options.signal,
  );
}

/** A task's query: one turn of a conversation closed right away under a multiround PD, else a plain query. */
export async function sendOnce(
  parts: QueryParts,
  base: string,
  document: ProtocolDocument | undefined,
  body: JsonValue,
  signal?: AbortSignal,
): Promise<QueryResult> {
  if (!document?.metadata.multiround) return sendQuery(parts, base, { body, protocol: document, signal });
  // One turn is all a task needs here; the conversation is closed right away, as the Python SDK does.
  const conversation = openConversation(parts.transport, base, (turnSignal) =>
    parts.documents.peerFields(base, document, turnSignal),
  );
  try {
    return await conversation.send(body, signal ? { signal } : {});
  } finally {
    await conversation
      .close()
      .catch((error: unknown) => parts.logger.warn(`closing a conversation with ${base}: ${describeError(error)}`));
  }
}
