// Asking a room's participant for its turn: the room document's query over Agora, or the turn as plain text in a
// ROAR, A2A or OAP participant's own protocol; one conversation per participant and room, within the turn timeout.
// A failure is told in fixed words: nothing a participant wrote reaches the transcript unless it is its reply.
import type { TurnUsage } from '../../_usage.js';
import { AgoraError, isAgoraError } from '../../errors.js';
import type { JsonValue } from '../../schemas.js';
import { peerConversation } from '../../bindings/peers.js';
import type { TokenSource } from '../../net/token-source.js';
import type { Sender, SenderConversation } from '../../sender/sender.js';
import { readTurnReply, ROOM_DOCUMENT, type TurnReply } from './document.js';
import type { Participant, RoomRecord } from './records.js';

/** The default of {@link RoomsOptions.maxReplyBytes}, and its bounds. */
export const TURN_REPLY_BYTES = { default: 256 * 1024, min: 64 * 1024, max: 1024 * 1024 } as const;

/** A turn reply cap within its bounds. */
export function turnReplyBytes(requested: number | undefined): number {
  return Math.min(TURN_REPLY_BYTES.max, Math.max(TURN_REPLY_BYTES.min, requested ?? TURN_REPLY_BYTES.default));
}

/** A turn as natural language, for a ROAR, A2A or OAP participant (which knows nothing of the room document). */
export function turnText(query: {
  topic: string;
  you: string;
  why: string;
  participants: string[];
  transcript: { speaker: string; text: string }[];
}): string {
  const lines = query.transcript.map((entry) => `${entry.speaker}: ${entry.text}`);
  return [
    `You take part in a discussion of several agents (${query.participants.join(', ')}) as ${query.you}. Topic: ${query.topic}`,
    `Why it is your turn: ${query.why}`,
    ...(lines.length ? ['The discussion so far:', ...lines] : []),
    'Answer with what you say, in plain text.',
  ].join('\n');
}

/**
 * Why a turn failed, in fixed words (its kind and HTTP status): nothing a participant wrote is copied into the
 * transcript, which people and other participants read.
 */
export function turnFailure(error: unknown, timedOut: boolean, timeoutMs: number): string {
  if (timedOut || (isAgoraError(error) && error.code === 'TIMEOUT')) return `timed out after ${timeoutMs} ms`;
  const cause = (error as { cause?: { cause?: { code?: string }; code?: string } } | undefined)?.cause;
  if (cause?.code === 'EFORBIDDENADDRESS' || cause?.cause?.code === 'EFORBIDDENADDRESS')
    return 'refused: the participant is on a loopback or private address';
  if (!isAgoraError(error)) return 'failed';
  const status = error.status === undefined ? '' : ` (HTTP ${error.status})`;
  if (error.code !== 'PEER_FAILURE') return `failed: ${error.code.toLowerCase().replaceAll('_', ' ')}${status}`;
  if (error.status === undefined) return 'unreachable';
  if (/: reply larger than \d+ bytes$/.test(error.message)) return `reply too large${status}`;
  if (/(,| reply) not JSON/.test(error.message)) return `not JSON${status}`;
  if (/, not an Agora reply$/.test(error.message)) return `not an Agora reply${status}`;
  return `answered a failure${status}`;
}

/**
 * Tokens of a turn: what the participant's LLM spent as its agent reported it (`Agora-Usage`), else the count its
 * reply gives, else an estimate of characters / 4 of the query and reply.
 */
function tokensOf(query: string, reply: TurnReply, usage: TurnUsage | undefined): number {
  if (usage) return usage.inputTokens + usage.outputTokens;
  return reply.tokens ?? Math.ceil((query.length + reply.message.length) / 4);
}

/** What a turn came to: the participant's reply and its tokens, or why it failed (in fixed words). */
export type TurnOutcome = { reply: TurnReply; tokens: number } | { error: string };

/** Options of {@link TurnAsker}: those of the rooms, with their sender. */
export type TurnAskerOptions = {
  sender: Sender;
  peerFetch?: typeof fetch | undefined;
  /** Where the tokens of participants of other protocols come from (the hub's client credentials). */
  peerTokenSource?: TokenSource | undefined;
  maxReplyBytes?: number | undefined;
  recentTurns?: number | undefined;
};

/** Asks participants for their turns, keeping each one's conversation across the room's turns. */
export class TurnAsker {
  readonly #options: TurnAskerOptions;
  readonly #conversations = new Map<string, Pick<SenderConversation, 'send'>>();

  constructor(options: TurnAskerOptions) {
    this.#options = options;
  }

  /** Asks one participant for its turn, within the room's turn timeout. */
  async ask(room: RoomRecord, speaker: string, why: string): Promise<TurnOutcome> {
    const participant = room.participants.find((candidate) => candidate.name === speaker)!;
    const recent = room.transcript
      .slice(-(this.#options.recentTurns ?? 20))
      .map(({ speaker: who, kind, text }) => ({ speaker: who, kind, text }));
    const query = {
      topic: room.topic,
      you: speaker,
      turn: room.turns + 1,
      why,
      pattern: room.pattern,
      participants: room.participants.filter((p) => !p.dropped).map((p) => p.name),
      transcript: recent,
    };
    const key = `${room.id}\u0000${speaker}`;
    let conversation = this.#conversations.get(key);
    if (!conversation)
      this.#conversations.set(key, (conversation = this.#conversation(participant, room.turnTimeoutMs)));
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new AgoraError('TIMEOUT', `no answer within ${room.turnTimeoutMs} ms`)),
      room.turnTimeoutMs,
    );
    try {
      const result = await conversation.send(participant.kind === undefined ? query : turnText(query), {
        signal: controller.signal,
      });
      const reply = readTurnReply(result.body);
      return { reply, tokens: tokensOf(JSON.stringify(query), reply, result.usage) };
    } catch (error) {
      // A conversation that failed is opened anew on the next turn.
      this.#conversations.delete(key);
      return { error: turnFailure(error, controller.signal.aborted, room.turnTimeoutMs) };
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A participant's conversation: the room document's over Agora; its session (ROAR), context (A2A) or nothing (OAP)
   * else.
   */
  #conversation(participant: Participant, timeoutMs: number): Pick<SenderConversation, 'send'> {
    if (participant.kind === undefined) return this.#options.sender.conversation(participant.url, ROOM_DOCUMENT);
    const fetch = this.#options.peerFetch;
    const peer = peerConversation(participant.kind, participant.url, undefined, {
      timeoutMs,
      maxReplyBytes: turnReplyBytes(this.#options.maxReplyBytes),
      ...(fetch ? { fetch } : {}),
      ...(this.#options.peerTokenSource ? { tokenSource: this.#options.peerTokenSource } : {}),
    });
    return { send: (body) => peer.send(body as JsonValue) };
  }
}
