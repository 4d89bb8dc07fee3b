// Where rooms live: records (the checkpoint of every turn), their events, and who runs each.
import type { Leases } from '../store.js';
import type { RoomEvent, RoomRecord } from './records.js';

/**
 * A room store: in memory by default; a shared store lets another hub process resume a room (its lease key: the room
 * id).
 */
export interface RoomStore extends Leases {
  get(id: string): Promise<RoomRecord | undefined>;
  /** Stores a room; false when `cap` active rooms exist and this one is new. */
  put(record: RoomRecord, cap: number): Promise<boolean>;
  /** Appends an event and returns it with its id. */
  append(roomId: string, type: RoomEvent['type'], data: RoomEvent['data']): Promise<RoomEvent>;
  /** Events after `afterId`, oldest first. */
  events(roomId: string, afterId: number): Promise<RoomEvent[]>;
  /** Rooms whose state is active or paused. */
  openRooms(): Promise<string[]>;
}

/** The default room store: this process's memory (a restarted hub forgets its rooms). */
export class MemoryRoomStore implements RoomStore {
  readonly #records = new Map<string, string>();
  readonly #events = new Map<string, RoomEvent[]>();
  readonly #maxEvents: number;

  constructor(options: { maxEventsPerRoom?: number } = {}) {
    this.#maxEvents = options.maxEventsPerRoom ?? 5000;
  }

  async get(id: string): Promise<RoomRecord | undefined> {
    const text = this.#records.get(id);
    return text === undefined ? undefined : (JSON.parse(text) as RoomRecord);
  }

  async put(record: RoomRecord, cap: number): Promise<boolean> {
    if (!this.#records.has(record.id) && (await this.openRooms()).length >= cap) return false;
    this.#records.set(record.id, JSON.stringify(record));
    return true;
  }

  async append(roomId: string, type: RoomEvent['type'], data: RoomEvent['data']): Promise<RoomEvent> {
    let events = this.#events.get(roomId);
    if (!events) this.#events.set(roomId, (events = []));
    const event: RoomEvent = { id: (events.at(-1)?.id ?? 0) + 1, type, data };
    events.push(event);
    if (events.length > this.#maxEvents) events.splice(0, events.length - this.#maxEvents);
    return event;
  }

  async events(roomId: string, afterId: number): Promise<RoomEvent[]> {
    // Ids are consecutive within a room: the ones after `afterId` start at a known index.
    const events = this.#events.get(roomId) ?? [];
    const first = events[0]?.id ?? 1;
    return events.slice(Math.max(0, afterId - first + 1));
  }

  // One process: the runner's own bookkeeping already keeps a room to one run.
  async claim(): Promise<boolean> {
    return true;
  }

  async release(): Promise<void> {}

  async close(): Promise<void> {}

  async openRooms(): Promise<string[]> {
    const open: string[] = [];
    for (const [id, text] of this.#records) {
      const { state } = JSON.parse(text) as RoomRecord;
      if (state === 'active' || state === 'paused') open.push(id);
    }
    return open;
  }
}
