// Internal: the ids of ended conversations, kept compact (8 bytes of table each, no object, no string) and dropped a
// generation at a time, so forgetting millions of them is one step, not a walk.

/** Two 32-bit FNV-1a hashes with different bases: 64 bits, so a false "expired" for an unknown id is negligible. */
function hash64(id: string): [number, number] {
  let low = 0x811c9dc5;
  let high = 0x01000193 ^ id.length;
  for (let index = 0; index < id.length; index += 1) {
    const code = id.charCodeAt(index);
    low = Math.imul(low ^ code, 0x01000193);
    high = Math.imul(high ^ code, 0x5bd1e995);
    high ^= high >>> 15;
  }
  // (0, 0) marks an empty slot.
  return [low >>> 0 || 1, high >>> 0];
}

/** An open-addressing set of 64-bit hashes in two typed arrays, kept at most half full. */
class HashSet64 {
  #low = new Uint32Array(64);
  #high = new Uint32Array(64);
  size = 0;

  has(low: number, high: number): boolean {
    const mask = this.#low.length - 1;
    for (let slot = (low ^ high) & mask; ; slot = (slot + 1) & mask) {
      const found = this.#low[slot]!;
      if (found === 0) return false;
      if (found === low && this.#high[slot] === high) return true;
    }
  }

  add(low: number, high: number): void {
    if (this.has(low, high)) return;
    if ((this.size + 1) * 2 > this.#low.length) this.#grow();
    this.#put(low, high);
    this.size += 1;
  }

  /** Bytes held. */
  get bytes(): number {
    return this.#low.byteLength * 2;
  }

  #put(low: number, high: number): void {
    const mask = this.#low.length - 1;
    let slot = (low ^ high) & mask;
    while (this.#low[slot] !== 0) slot = (slot + 1) & mask;
    this.#low[slot] = low;
    this.#high[slot] = high;
  }

  #grow(): void {
    const low = this.#low;
    const high = this.#high;
    this.#low = new Uint32Array(low.length * 2);
    this.#high = new Uint32Array(low.length * 2);
    for (let slot = 0; slot < low.length; slot += 1) if (low[slot] !== 0) this.#put(low[slot]!, high[slot]!);
  }
}

/** How many generations a tombstone period is cut into: a tombstone outlives its period by at most one of them. */
const GENERATIONS = 8;

/**
 * Tombstones of ended conversations: each kept at least until its time, at most one generation (an eighth of the
 * period, at least a second) longer, then dropped with its whole generation.
 */
export class Tombstones {
  readonly #width: number;
  /** Generation number (its end is `number × width`) → the hashes ending in it. */
  readonly #generations = new Map<number, HashSet64>();

  /** `periodMs`: how long a tombstone is kept, which sets the generations' width. */
  constructor(periodMs: number) {
    this.#width = Math.max(1000, Math.ceil(periodMs / GENERATIONS));
  }

  /** Keeps `id` as ended until `until` (Unix ms) at least. */
  add(id: string, until: number): void {
    const generation = Math.ceil(until / this.#width);
    let set = this.#generations.get(generation);
    if (!set) {
      set = new HashSet64();
      this.#generations.set(generation, set);
    }
    const [low, high] = hash64(id);
    set.add(low, high);
  }

  /** Whether `id` ended and is still remembered. */
  has(id: string): boolean {
    if (this.#generations.size === 0) return false;
    const [low, high] = hash64(id);
    for (const set of this.#generations.values()) if (set.has(low, high)) return true;
    return false;
  }

  /** Drops the generations wholly past at `now`; returns how many tombstones went. */
  drop(now: number): number {
    let dropped = 0;
    for (const [generation, set] of this.#generations) {
      if (generation * this.#width > now) continue;
      dropped += set.size;
      this.#generations.delete(generation);
    }
    return dropped;
  }

  /** Tombstones held and the bytes of their tables. */
  size(): { count: number; bytes: number } {
    let count = 0;
    let bytes = 0;
    for (const set of this.#generations.values()) {
      count += set.size;
      bytes += set.bytes;
    }
    return { count, bytes };
  }
}
