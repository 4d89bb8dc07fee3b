// A client for A2A agents through @a2a-js/sdk's own client (card resolution, transport choice, message send,
// streaming, tasks), A2A 1.0 and 0.3 alike (the SDK's compatibility layer picks the 0.3 wire for a 0.3 card). Its
// HTTP goes through the sender's bounded fetch: the caller's token and headers, timeouts, capped reads. The SDK is
// loaded when the first client is made.
import { randomUUID } from 'node:crypto';
import type { AgentCard, Message, Part, Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { AgoraError, isAgoraError } from '../../errors.js';
import type { JsonValue } from '../../schemas.js';
import { importOptional } from '../../_optional.js';
import {
  agentBaseUrl,
  boundedFetch,
  DEFAULT_SENDER_TIMEOUT_MS,
  type TransportOptions,
} from '../../sender/transport.js';

/**
 * The fields of an A2A agent card that callers read (the SDK's `AgentCard` has more): declared here so the package's
 * types need no @a2a-js/sdk, an optional peer loaded when the first client is made.
 */
export type A2aCard = {
  name: string;
  description: string;
  version: string;
  skills: { id: string; name: string; description: string; tags: string[] }[];
};

/** Options of {@link A2aClient}. */
export type A2aClientOptions = TransportOptions & {
  /**
   * Origins beyond the agent's own that its card may send the client's requests (and token) to. By default only the
   * agent's origin: a card naming no interface there is refused before anything is sent (RFC 9110 §11.5: a
   * credential belongs to its origin).
   */
  allowOrigins?: readonly string[];
};

/** The origin of a URL, or undefined when it is none. */
function originOf(url: string): string | undefined {
  return URL.canParse(url) ? new URL(url).origin : undefined;
}

/** A task's state in A2A's own words (`completed`, `failed`, `input-required`…). */
export type A2aState =
  | 'submitted'
  | 'working'
  | 'completed'
  | 'failed'
  | 'canceled'
  | 'input-required'
  | 'rejected'
  | 'auth-required'
  | 'unknown';

/** An A2A answer: its result (text, or data), the task and context it belongs to, and the task's state. */
export type A2aAnswer = { result: JsonValue; state: A2aState; taskId?: string; contextId?: string };

/** One event of {@link A2aClient.stream}: pieces of the answer as artifacts come, then the answer. */
export type A2aStreamPiece = { type: 'delta'; delta: JsonValue } | { type: 'done'; answer: A2aAnswer };

/** What {@link A2aClient.send} sends: text, or data (an object, e.g. `{protocolHash, body}`), in a conversation. */
export type A2aMessage = { body: JsonValue; contextId?: string; taskId?: string };

const STATES: Record<number, A2aState> = {
  1: 'submitted',
  2: 'working',
  3: 'completed',
  4: 'failed',
  5: 'canceled',
  6: 'input-required',
  7: 'rejected',
  8: 'auth-required',
};
const FAILED = new Set<A2aState>(['failed', 'canceled', 'rejected']);

/** A part of a message or artifact as JSON: its text, its data, or its URL. */
function partValue(part: Part): JsonValue | undefined {
  const content = part.content;
  if (content?.$case === 'text') return content.value;
  if (content?.$case === 'data') return (content.value ?? null) as JsonValue;
  if (content?.$case === 'url') return { url: content.value };
  return undefined;
}

/** Parts as one result: texts joined, a lone data part as itself, anything else as the list of part values. */
function partsResult(parts: readonly Part[]): JsonValue {
  const values = parts.map(partValue).filter((value): value is JsonValue => value !== undefined);
  if (values.length > 0 && values.every((value) => typeof value === 'string')) return values.join('');
  if (values.length === 1) return values[0]!;
  return values.length === 0 ? null : values;
}

/** A task's or message's answer. */
function answerOf(reply: Message | Task): A2aAnswer {
  if ('parts' in reply) {
    return {
      result: partsResult(reply.parts),
      state: 'completed',
      ...(reply.taskId ? { taskId: reply.taskId } : {}),
      ...(reply.contextId ? { contextId: reply.contextId } : {}),
    };
  }
  const state = STATES[reply.status?.state ?? 0] ?? 'unknown';
  const parts = reply.artifacts.flatMap((artifact) => artifact.parts);
  const result = parts.length > 0 ? partsResult(parts) : partsResult(reply.status?.message?.parts ?? []);
  return { result, state, taskId: reply.id, ...(reply.contextId ? { contextId: reply.contextId } : {}) };
}

/** The request of a message: text for a string, data for anything else. */
function messageOf(message: A2aMessage): Message {
  const content =
    typeof message.body === 'string'
      ? { $case: 'text' as const, value: message.body }
      : { $case: 'data' as const, value: message.body };
  return {
    messageId: randomUUID(),
    contextId: message.contextId ?? '',
    taskId: message.taskId ?? '',
    role: 1, // ROLE_USER
    parts: [{ content, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/**
 * A client for A2A agents: the card read from `/.well-known/agent-card.json`, then @a2a-js/sdk's client on the
 * interface it picks (JSON-RPC or HTTP+JSON; 1.0, or 0.3 through the SDK's compatibility layer).
 * @example const { result } = await new A2aClient().send('http://localhost:41241', { body: 'hello' });
 */
export class A2aClient {
  readonly #options: A2aClientOptions;
  readonly #clients = new Map<string, Promise<{ client: Client; card: AgentCard }>>();

  constructor(options: A2aClientOptions = {}) {
    this.#options = options;
  }

  /** The agent's card (resolved by the SDK, a 0.3 card translated to 1.0's shape). */
  async card(url: string): Promise<A2aCard> {
    return (await this.#client(url)).card;
  }

  /** Sends a message and waits for the answer (blocking; a task still running is polled until it ends or times out). */
  async send(url: string, message: A2aMessage, signal?: AbortSignal): Promise<A2aAnswer> {
    const { client } = await this.#client(url);
    let answer = answerOf(
      await this.#call('SendMessage', url, () =>
        client.sendMessage(
          { tenant: '', message: messageOf(message), configuration: undefined, metadata: undefined },
          signal ? { signal } : undefined,
        ),
      ),
    );
    const deadline = Date.now() + (this.#options.timeoutMs ?? DEFAULT_SENDER_TIMEOUT_MS);
    for (
      let wait = 100;
      (answer.state === 'submitted' || answer.state === 'working') && answer.taskId !== undefined;
      wait = Math.min(wait * 2, 2000)
    ) {
      if (Date.now() + wait > deadline)
        throw new AgoraError(
          'TIMEOUT',
          `A2A task ${answer.taskId} at ${agentBaseUrl(url)} still ${answer.state} after ${this.#options.timeoutMs ?? DEFAULT_SENDER_TIMEOUT_MS} ms`,
        );
      await new Promise((resolve) => setTimeout(resolve, wait));
      answer = await this.getTask(url, answer.taskId, signal);
    }
    return this.#settled(url, answer);
  }

  /** Streams a message's answer (`message/stream`): each artifact's parts as deltas, then the answer. */
  async *stream(url: string, message: A2aMessage, signal?: AbortSignal): AsyncGenerator<A2aStreamPiece> {
    const { client } = await this.#client(url);
    let task: Task | undefined;
    let last: A2aAnswer | undefined;
    const pieces: Part[] = [];
    try {
      for await (const event of client.sendMessageStream(
        { tenant: '', message: messageOf(message), configuration: undefined, metadata: undefined },
        signal ? { signal } : undefined,
      )) {
        const payload = event.payload;
        if (payload?.$case === 'message') last = answerOf(payload.value);
        else if (payload?.$case === 'task') task = payload.value;
        else if (payload?.$case === 'artifactUpdate') {
          const parts = payload.value.artifact?.parts ?? [];
          pieces.push(...parts);
          const delta = partsResult(parts);
          if (delta !== null) yield { type: 'delta', delta };
        } else if (payload?.$case === 'statusUpdate' && payload.value.status) {
          task = {
            ...(task ?? {
              id: payload.value.taskId,
              contextId: payload.value.contextId,
              artifacts: [],
              history: [],
              metadata: undefined,
            }),
            status: payload.value.status,
          };
        }
      }
    } catch (error) {
      throw this.#failure('SendStreamingMessage', url, error);
    }
    if (last === undefined && task !== undefined)
      last = { ...answerOf({ ...task, artifacts: [] }), ...(pieces.length ? { result: partsResult(pieces) } : {}) };
    if (last === undefined)
      throw new AgoraError(
        'PEER_FAILURE',
        `A2A SendStreamingMessage at ${agentBaseUrl(url)}: the stream ended without an answer`,
      );
    yield { type: 'done', answer: this.#settled(url, last) };
  }

  /** A task as the agent holds it now. */
  async getTask(url: string, id: string, signal?: AbortSignal): Promise<A2aAnswer> {
    const { client } = await this.#client(url);
    return answerOf(
      await this.#call('GetTask', url, () => client.getTask({ tenant: '', id }, signal ? { signal } : undefined)),
    );
  }

  /** Asks the agent to cancel a task; its state afterwards. */
  async cancelTask(url: string, id: string, signal?: AbortSignal): Promise<A2aAnswer> {
    const { client } = await this.#client(url);
    return answerOf(
      await this.#call('CancelTask', url, () =>
        client.cancelTask({ tenant: '', id, metadata: undefined }, signal ? { signal } : undefined),
      ),
    );
  }

  /** A failed, canceled or rejected task is a PEER_FAILURE (its state named, not the agent's text). */
  #settled(url: string, answer: A2aAnswer): A2aAnswer {
    if (FAILED.has(answer.state))
      throw new AgoraError(
        'PEER_FAILURE',
        `A2A task ${answer.taskId ?? ''} at ${agentBaseUrl(url)} ended ${answer.state}`,
      );
    return answer;
  }

  async #call<T>(operation: string, url: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw this.#failure(operation, url, error);
    }
  }

  /** An SDK error as a PEER_FAILURE naming the operation and agent: the kind of error and its code, not the peer's text. */
  #failure(operation: string, url: string, error: unknown): AgoraError {
    for (let cause = error, depth = 0; cause instanceof Error && depth < 4; cause = cause.cause, depth++)
      if (isAgoraError(cause)) return cause;
    const name = error instanceof Error ? error.constructor.name : 'error';
    const code =
      typeof (error as { code?: unknown })?.code === 'number' ? ` (code ${(error as { code: number }).code})` : '';
    return new AgoraError('PEER_FAILURE', `A2A ${operation} at ${agentBaseUrl(url)}: ${name}${code}`, { cause: error });
  }

  #client(url: string): Promise<{ client: Client; card: AgentCard }> {
    const base = agentBaseUrl(url);
    let made = this.#clients.get(base);
    if (made === undefined) {
      made = (async () => {
        const { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory } =
          await importOptional('@a2a-js/sdk', 'Calling A2A agents', () => import('@a2a-js/sdk/client'), 'PEER_FAILURE');
        // The token goes to the agent's origin and those the caller allowed, never to one a card names.
        const origin = new URL(base).origin;
        const allowed = new Set([origin, ...(this.#options.allowOrigins ?? []).map(originOf)]);
        const fetchImpl = boundedFetch({ ...this.#options, tokenOrigin: [...allowed].filter((o) => o !== undefined) });
        const legacyCompat = { enabled: true };
        const cardResolver = new DefaultAgentCardResolver({ fetchImpl, legacyCompat });
        let card = await this.#call('GetAgentCard', base, () => cardResolver.resolve(base));
        const supportedInterfaces = card.supportedInterfaces.filter((entry) => allowed.has(originOf(entry.url)));
        if (supportedInterfaces.length === 0) {
          const named = card.supportedInterfaces.map((entry) => originOf(entry.url) ?? 'an invalid URL')[0];
          throw new AgoraError(
            'PEER_FAILURE',
            named === undefined
              ? `A2A GetAgentCard at ${base}: the card names no interface on ${origin}`
              : `A2A GetAgentCard at ${base}: the card sends requests to ${named.slice(0, 200)}, not to the agent's ` +
                  `origin ${origin}; nothing was sent there (allow it with --allow-origin ${named.slice(0, 200)})`,
          );
        }
        card = { ...card, supportedInterfaces };
        const factory = new ClientFactory({
          transports: [
            new JsonRpcTransportFactory({ fetchImpl, legacyCompat }),
            new RestTransportFactory({ fetchImpl, legacyCompat }),
          ],
          cardResolver,
        });
        return { client: await this.#call('GetAgentCard', base, () => factory.createFromAgentCard(card)), card };
      })();
      made.catch(() => this.#clients.delete(base));
      this.#clients.set(base, made);
    }
    return made;
  }
}
