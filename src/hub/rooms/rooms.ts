// Rooms on the hub: created, run turn by turn (each an Agora query to a participant under the room document),
// paused, resumed, cancelled, joined by people, watched live. The record is saved after every turn.
import { nanoid } from 'nanoid';
import { AgoraError, describeError, isAgoraError } from '../../errors.js';
import { consoleLogger, type Logger } from '../../log.js';
import { KeyedQueue } from '../../_queue.js';
import type { JsonValue } from '../../schemas.js';
import { peerConversation } from '../../bindings/peers.js';
import { Sender, type SenderConversation } from '../../sender/sender.js';
import { readTurnReply, ROOM_DOCUMENT, type TurnReply } from './document.js';
import {
  MAX_MESSAGE_CHARS,
  trimTranscript,
  type Participant,
  type RoomEvent,
  type RoomRecord,
  type RoomRequest,
} from './records.js';
import { MemoryRoomStore, type RoomStore } from './store.js';
import { endOf, firstTurn, MAX_FAILURES, nextTurn } from './turns.js';

/** Options of {@link Rooms}. */
export type RoomsOptions = {
  store?: RoomStore;
  /** A participant as named in a request (a registered agent's name or id, or a URL) → its name and URL. */
  resolve: (target: string) => Promise<{ name: string; url: string; kind?: Participant['kind'] }>;
  /** The fetch turns to ROAR, A2A and OAP participants go through (default: the global fetch; the hub's is guarded). */
  peerFetch?: typeof fetch;
  /** Open rooms at most (default 1,000). */
  maxRooms?: number;
  /** Turns of transcript sent with each query (default 20). */
  recentTurns?: number;
  /** Sends the turns (default: a sender of plain queries reading at most `maxReplyBytes` of each reply). */
  sender?: Sender;
  /** Largest turn reply read, after decompression, in bytes: 64 KiB to 1 MiB (default 256 KiB; `--max-turn-reply-bytes`). */
  maxReplyBytes?: number;
  /** Time a runner's lease outlasts a turn's timeout (default 1 s): with the turn timeout, how long a dead process holds a room. */
  leaseMarginMs?: number;
  /** How often open rooms nobody runs are looked for, with a shared store (default 2 s; 0: only at start). */
  sweepMs?: number;
  now?: () => number;
  logger?: Logger;
};

/** What a person may do to a room. */
export type RoomAction = 'pause' | 'resume' | 'cancel';

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
  if (/, not JSON/.test(error.message)) return `not JSON${status}`;
  if (/, not an Agora reply$/.test(error.message)) return `not an Agora reply${status}`;
  return `answered a failure${status}`;
}

/** Tokens of a turn: the count a participant reports, else an estimate of characters / 4 of the query and reply. */
function tokensOf(query: string, reply: TurnReply): number {
  return reply.tokens ?? Math.ceil((query.length + reply.message.length) / 4);
}

/** The rooms of one hub process. */
export class Rooms {
  readonly store: RoomStore;
  readonly #options: RoomsOptions;
  readonly #queue = new KeyedQueue();
  readonly #running = new Set<string>();
  readonly #conversations = new Map<string, Pick<SenderConversation, 'send'>>();
  readonly #wakers = new Map<string, Set<() => void>>();
  readonly #sender: Sender;
  readonly #now: () => number;
  readonly #logger: Logger;
  #closed = false;
  readonly #owner = nanoid(12);
  readonly #sweep: NodeJS.Timeout | undefined;

  constructor(options: RoomsOptions) {
    this.#options = options;
    this.store = options.store ?? new MemoryRoomStore();
    this.#now = options.now ?? Date.now;
    this.#logger = options.logger ?? consoleLogger('agora-hub');
    this.#sender =
      options.sender ??
      new Sender({ llm: null, hub: null, logger: this.#logger, maxReplyBytes: turnReplyBytes(options.maxReplyBytes) });
    // With a shared store another process may die mid-room: its rooms are taken over once their leases run out.
    const sweepMs = options.sweepMs ?? 2000;
    if (!(this.store instanceof MemoryRoomStore) && sweepMs > 0) {
      this.#sweep = setInterval(
        () => void this.resumeOpen().catch((error: unknown) => this.#logger.warn(`rooms: ${describeError(error)}`)),
        sweepMs,
      );
      this.#sweep.unref();
    }
  }

  /** Creates a room and starts it. Throws BAD_REQUEST for an unknown participant, TOO_MANY_CONVERSATIONS when full. */
  async create(request: RoomRequest): Promise<RoomRecord> {
    const participants: RoomRecord['participants'] = [];
    for (const target of request.participants) {
      const { name, url, kind } = await this.#options.resolve(target).catch((error: unknown) => {
        throw new AgoraError(
          'BAD_REQUEST',
          `participant ${JSON.stringify(target.slice(0, 200))}: ${describeError(error)}`,
        );
      });
      if (participants.some((participant) => participant.name === name))
        throw new AgoraError('BAD_REQUEST', `participant ${name} is named twice`);
      participants.push({ name, url, ...(kind ? { kind } : {}), failures: 0 });
    }
    const lead =
      request.lead === undefined ? undefined : participants[request.participants.indexOf(request.lead)]!.name;
    const now = this.#now();
    const record: RoomRecord = {
      id: nanoid(16),
      topic: request.topic,
      pattern: request.pattern,
      ...(lead ? { lead } : {}),
      maxTurns: request.maxTurns,
      turnTimeoutMs: request.turnTimeoutMs,
      ...(request.budget ? { budget: request.budget } : {}),
      state: 'active',
      turns: 0,
      participants,
      transcript: [],
      trimmed: 0,
      tokens: 0,
      done: [],
      createdAt: now,
      updatedAt: now,
    };
    record.next = firstTurn(record);
    if (!(await this.store.put(record, this.#options.maxRooms ?? 1000)))
      throw new AgoraError('TOO_MANY_CONVERSATIONS', 'Too many open rooms');
    await this.#emit(record.id, 'state', { state: 'active' });
    this.#start(record.id);
    return record;
  }

  /** The open rooms (active or paused), at most `limit`. */
  async open(limit = 50): Promise<RoomRecord[]> {
    const rooms: RoomRecord[] = [];
    for (const id of (await this.store.openRooms()).slice(0, limit)) {
      const room = await this.store.get(id);
      if (room) rooms.push(room);
    }
    return rooms;
  }

  /** A room's record. */
  get(id: string): Promise<RoomRecord | undefined> {
    return this.store.get(id);
  }

  /** Pauses (after the turn under way), resumes or cancels a room; NOT_FOUND, or BAD_REQUEST when it has ended. */
  control(id: string, action: RoomAction): Promise<RoomRecord> {
    return this.#queue.run(id, async () => {
      const room = await this.#must(id);
      if (room.state === 'completed' || room.state === 'cancelled')
        throw new AgoraError('BAD_REQUEST', `the room has ended (${room.state})`);
      room.state = action === 'pause' ? 'paused' : action === 'resume' ? 'active' : 'cancelled';
      if (action === 'cancel') room.endedBecause = 'cancelled by a person';
      await this.#save(room);
      await this.#emit(id, 'state', { state: room.state });
      if (action === 'cancel')
        await this.#emit(id, 'flow_completed', { reason: room.endedBecause!, state: 'cancelled' });
      if (action === 'resume') this.#start(id);
      return room;
    });
  }

  /** A person's message, seen by every next turn. */
  say(id: string, text: string, from = 'person'): Promise<RoomRecord> {
    if (text.trim() === '' || text.length > MAX_MESSAGE_CHARS)
      throw new AgoraError('BAD_REQUEST', `a message is 1 to ${MAX_MESSAGE_CHARS} characters`);
    return this.#queue.run(id, async () => {
      const room = await this.#must(id);
      if (room.state === 'completed' || room.state === 'cancelled')
        throw new AgoraError('BAD_REQUEST', `the room has ended (${room.state})`);
      const speaker = from.trim().slice(0, 100);
      // A person never speaks under a participant's name: the transcript, the events and the pages would pass it off as the agent's.
      if (room.participants.some((participant) => participant.name.toLowerCase() === speaker.toLowerCase()))
        throw new AgoraError(
          'BAD_REQUEST',
          `${JSON.stringify(speaker)} is a participant's name; a person writes under another`,
        );
      room.transcript.push({ turn: room.turns, speaker, kind: 'person', text, tokens: 0, at: this.#now() });
      await this.#save(room);
      await this.#emit(id, 'new_message', { turn: room.turns, speaker, kind: 'person', text });
      return room;
    });
  }

  /** A room's events after `afterId`, then live until it ends or `signal` aborts. */
  async *watch(id: string, afterId: number, signal: AbortSignal): AsyncGenerator<RoomEvent> {
    let last = afterId;
    let idle = true;
    while (!signal.aborted) {
      for (const event of await this.store.events(id, last)) {
        last = event.id;
        yield event;
        if (event.type === 'flow_completed') return;
      }
      // The record is read only when nothing came for a while (a room gone, or ended by another process).
      if (idle) {
        const room = await this.store.get(id);
        if (!room || room.state === 'completed' || room.state === 'cancelled') return;
      }
      // Woken by this process's events; another process's show up at the next look (250 ms).
      idle = await new Promise<boolean>((resolve) => {
        const wakers = this.#wakers.get(id) ?? new Set<() => void>();
        this.#wakers.set(id, wakers);
        let timedOut = false;
        const done = () => {
          clearTimeout(timer);
          wakers.delete(done);
          signal.removeEventListener('abort', done);
          resolve(timedOut);
        };
        const timer = setTimeout(() => {
          timedOut = true;
          done();
        }, 250);
        wakers.add(done);
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }

  /** Picks up the open rooms no runner of this process runs (after a restart, say). */
  async resumeOpen(): Promise<void> {
    for (const id of await this.store.openRooms()) this.#start(id);
  }

  /** Stops running rooms after their current turn. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweep);
    for (const wakers of this.#wakers.values()) for (const wake of wakers) wake();
  }

  async #must(id: string): Promise<RoomRecord> {
    const room = await this.store.get(id);
    if (!room) throw new AgoraError('NOT_FOUND', 'Room not found');
    return room;
  }

  async #save(room: RoomRecord): Promise<void> {
    room.updatedAt = this.#now();
    trimTranscript(room);
    await this.store.put(room, Number.MAX_SAFE_INTEGER);
  }

  async #emit(id: string, type: RoomEvent['type'], data: RoomEvent['data']): Promise<void> {
    await this.store.append(id, type, data);
    for (const wake of this.#wakers.get(id) ?? []) wake();
  }

  #start(id: string): void {
    if (this.#running.has(id) || this.#closed) return;
    this.#running.add(id);
    this.#run(id)
      .catch((error: unknown) => this.#logger.error(`room ${id}: ${describeError(error)}`))
      .finally(() => {
        this.#running.delete(id);
        void this.store.release(id, this.#owner).catch(() => undefined);
      });
  }

  async #run(id: string): Promise<void> {
    while (!this.#closed) {
      const planned = await this.#queue.run(id, async () => {
        const room = await this.store.get(id);
        if (!room || room.state !== 'active') return undefined;
        // One runner per room across processes: the lease covers the coming turn.
        if (!(await this.store.claim(id, this.#owner, room.turnTimeoutMs + (this.#options.leaseMarginMs ?? 1000))))
          return undefined;
        const end = endOf(room);
        const synthesisDue = end?.synthesis === true && !room.transcript.some((entry) => entry.kind === 'synthesis');
        if (end && !synthesisDue) {
          room.state = 'completed';
          room.endedBecause = end.reason;
          delete room.next;
          await this.#save(room);
          await this.#emit(id, 'flow_completed', { reason: end.reason, state: 'completed', turns: room.turns });
          return undefined;
        }
        const turn = synthesisDue
          ? { speaker: room.lead!, why: `synthesis: sum the discussion up (${end!.reason})` }
          : (room.next ?? firstTurn(room));
        await this.#emit(id, 'turn_notification', { turn: room.turns + 1, speaker: turn.speaker, why: turn.why });
        return { room, turn, synthesis: synthesisDue };
      });
      if (!planned) return;
      const { room, turn, synthesis } = planned;
      const outcome = await this.#ask(room, turn.speaker, turn.why);
      await this.#queue.run(id, () => this.#record(id, turn.speaker, synthesis, outcome));
    }
  }

  /** Asks one participant for its turn, within the room's turn timeout. */
  async #ask(
    room: RoomRecord,
    speaker: string,
    why: string,
  ): Promise<{ reply: TurnReply; tokens: number } | { error: string }> {
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
      return { reply, tokens: tokensOf(JSON.stringify(query), reply) };
    } catch (error) {
      // A conversation that failed is opened anew on the next turn.
      this.#conversations.delete(key);
      return { error: turnFailure(error, controller.signal.aborted, room.turnTimeoutMs) };
    } finally {
      clearTimeout(timer);
    }
  }

  /** A participant's conversation: the room document's over Agora; its session (ROAR), context (A2A) or nothing (OAP) else. */
  #conversation(participant: Participant, timeoutMs: number): Pick<SenderConversation, 'send'> {
    if (participant.kind === undefined) return this.#sender.conversation(participant.url, ROOM_DOCUMENT);
    const fetch = this.#options.peerFetch;
    const peer = peerConversation(participant.kind, participant.url, undefined, {
      timeoutMs,
      maxReplyBytes: turnReplyBytes(this.#options.maxReplyBytes),
      ...(fetch ? { fetch } : {}),
    });
    return { send: (body) => peer.send(body as JsonValue) };
  }

  /** Applies a turn's outcome to the latest record (a pause or a message may have come meanwhile) and saves it. */
  async #record(
    id: string,
    speaker: string,
    synthesis: boolean,
    outcome: { reply: TurnReply; tokens: number } | { error: string },
  ): Promise<void> {
    const room = await this.store.get(id);
    if (!room || room.state === 'cancelled' || room.state === 'completed') return;
    const participant = room.participants.find((candidate) => candidate.name === speaker)!;
    room.turns += 1;
    const at = this.#now();
    if ('error' in outcome) {
      participant.failures += 1;
      if (participant.failures >= MAX_FAILURES) participant.dropped = true;
      room.transcript.push({ turn: room.turns, speaker, kind: 'skipped', text: outcome.error, tokens: 0, at });
    } else {
      participant.failures = 0;
      room.tokens += outcome.tokens;
      if (outcome.reply.done && !room.done.includes(speaker)) room.done.push(speaker);
      room.transcript.push({
        turn: room.turns,
        speaker,
        kind: synthesis ? 'synthesis' : 'agent',
        text: outcome.reply.message,
        tokens: outcome.tokens,
        at,
      });
    }
    const next = nextTurn(room, speaker, 'error' in outcome ? undefined : outcome.reply);
    if (next) room.next = next;
    else delete room.next;
    if (synthesis) {
      room.state = 'completed';
      room.endedBecause = endOf(room)?.reason ?? 'the lead wrote the synthesis';
    }
    await this.#save(room);
    const entry = room.transcript.at(-1)!;
    await this.#emit(id, 'new_message', {
      turn: entry.turn,
      speaker,
      kind: entry.kind,
      text: entry.text,
      tokens: entry.tokens,
      at: entry.at,
      ...(participant.dropped && 'error' in outcome ? { dropped: true } : {}),
    });
    if (synthesis)
      await this.#emit(id, 'flow_completed', { reason: room.endedBecause!, state: 'completed', turns: room.turns });
  }
}
