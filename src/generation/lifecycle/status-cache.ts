// Where a routine stands, read through a short cache: the CLI approves from another process, and a query must
// not read memory and stat the file each time.
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { AgentMemory } from '../../memory/file.js';
import type { JsonValue } from '../../schemas.js';
import type { RoutineStatus } from './records.js';

/** A routine's status and its file's stamp (status time, mtime, size), as read at `at`. */
export type StatusEntry = { at: number; status: RoutineStatus | undefined; stamp: string | undefined };

/** How long a routine's status is trusted before memory is read again: how fast a CLI approval takes effect. */
const STATUS_TTL_MS = 1000;

/** Statuses under `<prefix>/status`, cached for a second; writes go through and drop the cached entry. */
export class StatusCache {
  readonly #memory: AgentMemory;
  readonly #dir: string;
  readonly #now: () => number;
  readonly #statuses = new Map<string, StatusEntry>();
  readonly #reading = new Map<string, Promise<StatusEntry>>();
  readonly #onWrite: ((status: RoutineStatus) => void) | undefined;

  constructor(memory: AgentMemory, dir: string, now: () => number, onWrite?: (status: RoutineStatus) => void) {
    this.#memory = memory;
    this.#dir = dir;
    this.#now = now;
    this.#onWrite = onWrite;
  }

  /** The status as memory has it now. */
  read(prefix: string): Promise<RoutineStatus | undefined> {
    return this.#memory.get(`${prefix}/status`) as Promise<RoutineStatus | undefined>;
  }

  /** Writes a status. */
  async write(prefix: string, status: RoutineStatus): Promise<void> {
    await this.#memory.set(`${prefix}/status`, status as unknown as JsonValue);
    this.#statuses.delete(prefix);
    this.#onWrite?.(status);
  }

  /** The cached entry while it is trusted, else undefined (then {@link entry} reads it). */
  fresh(prefix: string): StatusEntry | undefined {
    const cached = this.#statuses.get(prefix);
    return cached && this.#now() - cached.at < STATUS_TTL_MS ? cached : undefined;
  }

  /** The status and the file's stamp, re-read from memory at most every second (one read at a time per prefix). */
  async entry(prefix: string): Promise<StatusEntry> {
    const cached = this.fresh(prefix);
    if (cached) return cached;
    let reading = this.#reading.get(prefix);
    if (!reading) {
      reading = this.#load(prefix).finally(() => this.#reading.delete(prefix));
      this.#reading.set(prefix, reading);
    }
    return reading;
  }

  /** Forgets every cached entry. */
  clear(): void {
    this.#statuses.clear();
  }

  async #load(prefix: string): Promise<StatusEntry> {
    const status = await this.read(prefix);
    let stamp: string | undefined;
    if (status?.file) {
      try {
        const info = await stat(resolve(this.#dir, status.file));
        stamp = `${status.updatedAt}|${info.mtimeMs}|${info.size}`;
      } catch {
        stamp = undefined;
      }
    }
    const entry = { at: this.#now(), status, stamp };
    this.#statuses.set(prefix, entry);
    return entry;
  }
}
