// A client for ROAR agents (ROAR 1.0, spec 0.3): card and health discovery, signed messages over `POST /roar/message`
// with each reply verified (to agents with a card, and to card-less ones such as ROAR's own `create_roar_router`),
// answers streamed over the WebSocket (`/roar/ws`), and the agent's task events over SSE (`/roar/events`). Over the
// sender's transport: timeouts, capped reads, errors naming method and URL.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { AgoraError, isAgoraError } from '../../errors.js';
import type { JsonObject, JsonValue } from '../../schemas.js';
import { rawKeyHex } from './signing.js';
import {
  agentBaseUrl,
  DEFAULT_SENDER_TIMEOUT_MS,
  getJson,
  JsonText,
  peerHeadersFor,
  PeerTransport,
  type TransportOptions,
} from '../../sender/transport.js';
import {
  parseRoarText,
  readRoarReply,
  roarResult,
  writeRoarMessage,
  type RoarIntent,
  type RoarReply,
  type RoarSelf,
  type RoarSigning,
} from './client-message.js';
import { cardlessAddress, roarCardSchema, type RoarCard } from './client-card.js';
import { roarEvents, type RoarStreamEvent } from './client-events.js';
import { roarSocketExchange } from './client-socket.js';

export type { RoarReply, RoarSelf } from './client-message.js';
export { cardlessAddress, isRoarHealth, roarCardSchema, type RoarCard } from './client-card.js';
export type { RoarStreamEvent } from './client-events.js';

/** Options of {@link RoarClient}. */
export type RoarClientOptions = TransportOptions &
  RoarSigning & {
    /** Who we are (default: a fresh `did:roar:agent:agora-client-…` with its own Ed25519 key, kept by this client). */
    self?: RoarSelf;
  };

/** What {@link RoarClient.ask} sends: natural language, or a query under an Agora protocol. */
export type RoarAsk = {
  body: JsonValue;
  protocolHash?: string;
  protocolSources?: string[];
  sessionId?: string;
  intent?: RoarIntent;
};

/** A ROAR answer: its result, the session it continues (when the agent named one), and the verified reply. */
export type RoarAnswer = { result: JsonValue; sessionId?: string; reply: RoarReply };

/** One event of {@link RoarClient.stream}: pieces of the answer (when the agent streams), then the answer. */
export type RoarStreamPiece = { type: 'delta'; delta: string } | { type: 'done'; answer: RoarAnswer };

/** A fresh client identity: a DID and an Ed25519 key pair. */
function freshSelf(): RoarSelf {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    did: `did:roar:agent:agora-client-${randomBytes(8).toString('hex')}`,
    displayName: 'agora-client',
    publicKeyHex: rawKeyHex(publicKey),
    privateKey,
  };
}

/** The payload of an ask: `{protocolHash, body}` under a protocol, else `{task: text}`. */
function payloadOf(ask: RoarAsk): JsonObject {
  if (ask.protocolHash !== undefined)
    return {
      protocolHash: ask.protocolHash,
      body: ask.body,
      ...(ask.protocolSources ? { protocolSources: ask.protocolSources } : {}),
    };
  return { task: typeof ask.body === 'string' ? ask.body : JSON.stringify(ask.body) };
}

/**
 * A client for ROAR agents. The agent's DID comes from its card (read once per URL); an agent that serves no card
 * (404) is addressed by {@link cardlessAddress}. Messages are signed when a secret is given (HMAC) or, without one,
 * with this client's Ed25519 key; replies are verified whenever a secret or a trusted key for the replying DID is
 * configured.
 * @example const { result } = await new RoarClient({ secret }).ask('http://localhost:8089', { body: 'review this code' });
 */
export class RoarClient {
  readonly self: RoarSelf;
  readonly #transport: PeerTransport;
  readonly #options: RoarClientOptions;
  /** Per agent URL: its card, or undefined when it serves none (read once). */
  readonly #cards = new Map<string, Promise<RoarCard | undefined>>();

  constructor(options: RoarClientOptions = {}) {
    this.#options = options;
    this.self = options.self ?? freshSelf();
    this.#transport = new PeerTransport(options);
  }

  /** The agent's card (`GET /roar/card`), read once per URL; a GET, tried again when a connection fails. */
  async card(url: string, signal?: AbortSignal): Promise<RoarCard> {
    const base = agentBaseUrl(url);
    const card = await this.#cardOf(base, signal);
    if (card === undefined)
      throw new AgoraError('PEER_FAILURE', `GET ${base}/roar/card: HTTP 404 (the agent serves no ROAR card)`, {
        status: 404,
      });
    return card;
  }

  /** The card at `base`, or undefined when `/roar/card` answers 404 (ROAR's own router serves none); kept once read. */
  #cardOf(base: string, signal: AbortSignal | undefined): Promise<RoarCard | undefined> {
    let card = this.#cards.get(base);
    if (card === undefined) {
      const target = `${base}/roar/card`;
      card = getJson(this.#transport, target, signal ? { signal } : {}).then(
        (json) => {
          const parsed = roarCardSchema.safeParse(json);
          if (!parsed.success) throw new AgoraError('PEER_FAILURE', `GET ${target}: not a ROAR agent card`);
          return parsed.data;
        },
        (error: unknown) => {
          if (isAgoraError(error) && error.status === 404) return undefined;
          throw error;
        },
      );
      card.catch(() => this.#cards.delete(base));
      this.#cards.set(base, card);
    }
    return card;
  }

  /** Whom messages to `base` are addressed to: its card's identity, or {@link cardlessAddress} when it has no card. */
  async #recipient(base: string, signal: AbortSignal | undefined): Promise<JsonObject> {
    const card = await this.#cardOf(base, signal);
    return card === undefined ? cardlessAddress(base) : (card.identity as JsonObject);
  }

  /** The agent's `GET /roar/health` (`{status: "ok", …}`); a PEER_FAILURE when it is not healthy. */
  async health(url: string, signal?: AbortSignal): Promise<{ status: string; protocol?: string }> {
    const target = `${agentBaseUrl(url)}/roar/health`;
    const parsed = z
      .looseObject({ status: z.string().max(50), protocol: z.string().max(50).optional() })
      .safeParse(await getJson(this.#transport, target, signal ? { signal } : {}));
    if (!parsed.success) throw new AgoraError('PEER_FAILURE', `GET ${target}: not a ROAR health reply`);
    if (parsed.data.status !== 'ok' && parsed.data.status !== 'healthy')
      throw new AgoraError('PEER_FAILURE', `GET ${target}: the agent reports ${JSON.stringify(parsed.data.status)}`);
    return { status: parsed.data.status, ...(parsed.data.protocol ? { protocol: parsed.data.protocol } : {}) };
  }

  /** Sends one message (`POST /roar/message`, never retried) and returns the verified reply. */
  async send(
    url: string,
    message: { intent: RoarIntent; payload: JsonObject; context?: JsonObject },
    signal?: AbortSignal,
  ): Promise<RoarReply> {
    const base = agentBaseUrl(url);
    const { id, text } = writeRoarMessage(
      { self: this.self, to: await this.#recipient(base, signal), ...message },
      this.#options,
    );
    const target = `${base}/roar/message`;
    const response = await this.#transport.exchange('POST', target, new JsonText(text), signal);
    const what = `POST ${target}`;
    if (response.status < 200 || response.status > 299) {
      const json = (() => {
        try {
          return JSON.parse(Buffer.from(response.bytes).toString('utf8')) as { error?: unknown };
        } catch {
          return undefined;
        }
      })();
      const code = typeof json?.error === 'string' && /^[\w.-]{1,60}$/.test(json.error) ? ` (${json.error})` : '';
      throw new AgoraError('PEER_FAILURE', `${what}: HTTP ${response.status}${code}`, { status: response.status });
    }
    return readRoarReply(
      parseRoarText(Buffer.from(response.bytes).toString('utf8'), what),
      id,
      this.self,
      this.#options,
      what,
    );
  }

  /** Asks the agent (`delegate` by default) and returns its answer; an error payload is a PEER_FAILURE. */
  async ask(url: string, ask: RoarAsk, signal?: AbortSignal): Promise<RoarAnswer> {
    const reply = await this.send(
      url,
      {
        intent: ask.intent ?? 'delegate',
        payload: payloadOf(ask),
        ...(ask.sessionId ? { context: { session_id: ask.sessionId } } : {}),
      },
      signal,
    );
    return answerOf(reply, `POST ${agentBaseUrl(url)}/roar/message`);
  }

  /**
   * Asks over the agent's WebSocket (`/roar/ws`): `delta` pieces while the agent streams (asked for; `deltas: false`
   * does not ask, and drops any that come), then the verified answer. Each wait is bounded by the timeout.
   */
  async *stream(
    url: string,
    ask: RoarAsk & { deltas?: boolean },
    signal?: AbortSignal,
  ): AsyncGenerator<RoarStreamPiece> {
    const base = agentBaseUrl(url);
    const context: JsonObject = ask.sessionId ? { session_id: ask.sessionId } : {};
    const { id, text } = writeRoarMessage(
      {
        self: this.self,
        to: await this.#recipient(base, signal),
        intent: ask.intent ?? 'delegate',
        payload: payloadOf(ask),
        context,
      },
      this.#options,
    );
    const what = `WebSocket ${base.replace(/^http/, 'ws')}/roar/ws`;
    for await (const piece of roarSocketExchange(base, text, {
      ...(await this.#socketOptions(signal, base)),
      ...(ask.deltas === false ? { deltas: false } : {}),
    })) {
      if (piece.type === 'delta') {
        if (ask.deltas !== false) yield piece;
      } else
        yield {
          type: 'done',
          answer: answerOf(readRoarReply(piece.message, id, this.self, this.#options, what), what),
        };
    }
  }

  /** The agent's task events over SSE (`GET /roar/events`, one session's with `sessionId`), until `signal` aborts. */
  events(url: string, options: { sessionId?: string; signal?: AbortSignal } = {}): AsyncGenerator<RoarStreamEvent> {
    return roarEvents(url, this.#options, options);
  }

  async #socketOptions(signal: AbortSignal | undefined, base: string) {
    return {
      timeoutMs: this.#options.timeoutMs ?? DEFAULT_SENDER_TIMEOUT_MS,
      maxBytes: this.#options.maxReplyBytes ?? 16 * 1024 * 1024,
      headers: await peerHeadersFor(this.#options, `${base}/roar/ws`),
      ...(signal ? { signal } : {}),
    };
  }
}

/** A reply's answer and the session it continues. */
function answerOf(reply: RoarReply, what: string): RoarAnswer {
  const result = roarResult(reply, what);
  const session = reply.context.session_id;
  return { result, reply, ...(typeof session === 'string' && session !== '' ? { sessionId: session } : {}) };
}
