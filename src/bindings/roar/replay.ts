// Replay protection for ROAR: each message id is accepted once within a window (600 s by default).

/** Remembers message ids for a while; implementations: {@link MemoryReplayGuard} (one process), `RedisReplayGuard` (shared). */
export interface ReplayGuard {
  /** True the first time an id is seen within `ttlMs`; false for a replay. Atomic across its users. */
  firstSeen(id: string, ttlMs: number): Promise<boolean>;
  close(): Promise<void>;
}

/** Options of {@link MemoryReplayGuard}. */
export type MemoryReplayGuardOptions = {
  /** Most ids remembered at once (default 100 000); past it the oldest are forgotten first. */
  maxEntries?: number;
  /** Clock in Unix milliseconds. */
  now?: () => number;
};

/** The default guard: a bounded map in this process, oldest entries first (Map keeps insertion order). */
export class MemoryReplayGuard implements ReplayGuard {
  readonly #seen = new Map<string, number>();
  readonly #max: number;
  readonly #now: () => number;

  constructor(options: MemoryReplayGuardOptions = {}) {
    this.#max = options.maxEntries ?? 100_000;
    this.#now = options.now ?? Date.now;
  }

  async firstSeen(id: string, ttlMs: number): Promise<boolean> {
    const now = this.#now();
    const until = this.#seen.get(id);
    if (until !== undefined && until > now) return false;
    if (until !== undefined) this.#seen.delete(id);
    // Entries are in arrival order with the same TTL, so expired ones are at the front.
    for (const [key, expires] of this.#seen) {
      if (expires > now && this.#seen.size < this.#max) break;
      this.#seen.delete(key);
    }
    this.#seen.set(id, now + ttlMs);
    return true;
  }

  async close(): Promise<void> {
    this.#seen.clear();
  }
}
