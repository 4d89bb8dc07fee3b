// Internal: the ids of ended conversations, kept compact (at most 16 bytes of table each, no object, no string) and
// dropped a generation at a time, so forgetting millions of them is one step, not a walk; tables are never rehashed.

/** MurmurHash3's finalizer: every input bit moves every output bit (ids that differ in one character spread apart). */
function mix(value: number): number {
  value = Math.imul(value ^ (value >>> 16), 0x85ebca6b);
  value = Math.imul(value ^ (value >>> 13), 0xc2b2ae35);
  // Signed: a 32-bit integer stays a small integer in V8 (an unsigned one above 2^31 would be a heap number).
  return value ^ (value >>> 16);
}

// The two halves of the last hash64 (no array allocated per call: a sweep hashes hundreds of thousands).
let hashLow = 0;
let hashHigh = 0;

/** Two independent 32-bit hashes (into hashLow, hashHigh): 64 bits, so a false "expired" for an unknown id is negligible. */
function hash64(id: string): void {
  let low = 0x811c9dc5 ^ id.length;
  let high = 0x9747b28c;
  for (let index = 0; index < id.length; index += 1) {
    const code = id.charCodeAt(index);
    low = Math.imul(low ^ code, 0x01000193);
    high = Math.imul(high ^ code, 0x5bd1e995);
    high ^= high >>> 15;
  }
  // 0 in the low half marks an empty slot.
  hashLow = mix(low) || 1;
  hashHigh = mix(high);
}

/** Slots of the largest table: a full one is followed by another, never rehashed (no pause, whatever the count). */
const MAX_SLOTS = 1 << 16;

/** A fixed-size open-addressing set of 64-bit hashes in two typed arrays (linear probing), filled to half. */
class HashTable64 {
  readonly #low: Int32Array;
  readonly #high: Int32Array;
  size = 0;

  constructor(slots: number) {
    this.#low = new Int32Array(slots);
    this.#high = new Int32Array(slots);
  }

  get full(): boolean {
    return this.size * 2 >= this.#low.length;
  }

  get slots(): number {
    return this.#low.length;
  }

  has(low: number, high: number): boolean {
    const mask = this.#low.length - 1;
    for (let slot = low & mask; ; slot = (slot + 1) & mask) {
      const found = this.#low[slot]!;
      if (found === 0) return false;
      if (found === low && this.#high[slot] === high) return true;
    }
  }

  add(low: number, high: number): void {
    const mask = this.#low.length - 1;
    let slot = low & mask;
    while (this.#low[slot] !== 0) {
      if (this.#low[slot] === low && this.#high[slot] === high) return;
      slot = (slot + 1) & mask;
    }
    this.#low[slot] = low;
    this.#high[slot] = high;
    this.size += 1;
  }
}

/** The tombstones of one generation: tables of doubling size up to {@link MAX_SLOTS}, then more of that size. */
class Generation {
  readonly tables: HashTable64[] = [new HashTable64(64)];

  add(low: number, high: number): void {
    let last = this.tables[this.tables.length - 1]!;
    if (last.full) {
      last = new HashTable64(Math.min(MAX_SLOTS, last.slots * 2));
      this.tables.push(last);
    }
    last.add(low, high);
  }

  has(low: number, high: number): boolean {
    for (const table of this.tables) if (table.has(low, high)) return true;
    return false;
  }

  get size(): number {
    let size = 0;
    for (const table of this.tables) size += table.size;
    return size;
  }

  /** Bytes of its tables. */
  get bytes(): number {
    let bytes = 0;
    for (const table of this.tables) bytes += table.slots * 8;
    return bytes;
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
  readonly #generations = new Map<number, Generation>();

  /** `periodMs`: how long a tombstone is kept, which sets the generations' width. */
  constructor(periodMs: number) {
    this.#width = Math.max(1000, Math.ceil(periodMs / GENERATIONS));
  }

  /** Keeps `id` as ended until `until` (Unix ms) at least. */
  add(id: string, until: number): void {
    const generation = Math.ceil(until / this.#width);
    let set = this.#generations.get(generation);
    if (!set) {
      set = new Generation();
      this.#generations.set(generation, set);
    }
    hash64(id);
    set.add(hashLow, hashHigh);
  }

  /** Whether `id` ended and is still remembered. */
  has(id: string): boolean {
    if (this.#generations.size === 0) return false;
    hash64(id);
    for (const set of this.#generations.values()) if (set.has(hashLow, hashHigh)) return true;
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
