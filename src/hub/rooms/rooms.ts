// Rooms on the hub: created, run turn by turn (each an Agora query to a participant under the room document),
// paused, resumed, cancelled, joined by people, watched live. The record is saved after every turn.
import { inSpan, TRACING, type SpanOptions } from '../../telemetry/tracing.js';
import { nanoid } from 'nanoid';
import { AgoraError, describeError } from '../../errors.js';
import { consoleLogger, type Logger } from '../../log.js';
import { KeyedQueue } from '../../_queue.js';
import { Sender } from '../../sender/sender.js';
import { TurnAsker, turnReplyBytes, type TurnAskerOptions, type TurnOutcome } from './ask.js';
import {
  MAX_MESSAGE_CHARS,
  trimTranscript,
  type Participant,
  type RoomEvent,
  type RoomRecord,
  type RoomRequest,
} from './records.js';
import { MemoryRoomStore, type RoomStore } from './store.js';
import { applyTurn, endOf, firstTurn } from './turns.js';

/** Options of {@link Rooms}. */
export type RoomsOptions = {
  store?: RoomStore;
  /** A participant as named in a request (a registered agent's name or id, or a URL) → its name and URL. */
  resolve: (target: string) => Promise<{ name: string; url: string; kind?: Participant['kind'] }>;
  /** The fetch turns to ROAR, A2A and OAP participants go through (default: the global fetch; the hub's is guarded). */
  peerFetch?: typeof fetch;
  /** Where participants' tokens come from, beside the sender's (the hub's client credentials). */
  peerTokenSource?: TurnAskerOptions['peerTokenSource'];
  /** Open rooms at most (default 1,000). */
  maxRooms?: number;
  /** Turns of transcript sent with each query (default 20). */
  recentTurns?: number;
  /** Sends the turns (default: a sender of plain queries reading at most `maxReplyBytes` of each reply). */
  sender?: Sender;
  /**
   * Largest turn reply read, after decompression, in bytes: 64 KiB to 1 MiB (default 256 KiB;
   * `--max-turn-reply-bytes`).
   */
  maxReplyBytes?: number;
  /**
   * Time a runner's lease outlasts a turn's timeout (default 1 s): with the turn timeout, how long a dead process holds
   * a room.
   */
  leaseMarginMs?: number;
  /** How often open rooms nobody runs are looked for, with a shared store (default 2 s; 0: only at start). */
  sweepMs?: number;
  now?: () => number;
  logger?: Logger;
};

/** What a person may do to a room. */
export type RoomAction = 'pause' | 'resume' | 'cancel';

/** The rooms of one hub process. */
export class Rooms {
  readonly store: RoomStore;
  readonly #options: RoomsOptions;
  readonly #queue = new KeyedQueue();
  readonly #running = new Set<string>();
  readonly #wakers = new Map<string, Set<() => void>>();
  readonly #asker: TurnAsker;
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
    const sender =
      options.sender ??
      new Sender({ llm: null, hub: null, logger: this.#logger, maxReplyBytes: turnReplyBytes(options.maxReplyBytes) });
    this.#asker = new TurnAsker({ ...options, sender });
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
      // A person never speaks under a participant's name: the transcript, the events and the pages would pass it off as
      // the agent's.
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
      const ask = () => this.#asker.ask(room, turn.speaker, turn.why);
      // Traced, each turn is the hub's span, the participant's own spans under it (the query carries its context).
      const outcome = TRACING.on ? await inSpan('agora.room.turn', turnSpan(room, turn.speaker), ask) : await ask();
      await this.#queue.run(id, () => this.#record(id, turn.speaker, synthesis, outcome));
    }
  }

  /** Applies a turn's outcome to the latest record (a pause or a message may have come meanwhile) and saves it. */
  async #record(id: string, speaker: string, synthesis: boolean, outcome: TurnOutcome): Promise<void> {
    const room = await this.store.get(id);
    if (!room || room.state === 'cancelled' || room.state === 'completed') return;
    const participant = applyTurn(room, speaker, synthesis, outcome, this.#now());
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

/** A room turn's span: the room, the turn's number and speaker. */
function turnSpan(room: RoomRecord, speaker: string): SpanOptions {
  return { attributes: { 'agora.room.id': room.id, 'agora.room.turn': room.turns + 1, 'agora.room.speaker': speaker } };
}
