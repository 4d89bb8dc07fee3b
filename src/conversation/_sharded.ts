// Internal: a map cut into shards, so that growing or shrinking it never rehashes more than a shard at once. A
// single V8 Map of 500,000 entries rehashes all of them when it grows past a power of two or shrinks under a
// quarter: a pause of ~100 ms on this machine; 64 shards make each such step ~1/64 of that.

const SHARDS = 64;

/** Which shard an id goes to: a hash of its first and last eight characters (where ids, random or counted, differ). */
function shardOf(id: string): number {
  const length = id.length;
  let hash = 0x811c9dc5;
  const ends = Math.min(8, length);
  for (let index = 0; index < ends; index += 1) hash = Math.imul(hash ^ id.charCodeAt(index), 0x01000193);
  for (let index = Math.max(ends, length - 8); index < length; index += 1)
    hash = Math.imul(hash ^ id.charCodeAt(index), 0x01000193);
  return (hash ^ (hash >>> 15)) & (SHARDS - 1);
}

/** A string-keyed map in {@link SHARDS} shards. */
export class ShardedMap<V> {
  readonly #shards: Map<string, V>[] = Array.from({ length: SHARDS }, () => new Map<string, V>());
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(key: string): V | undefined {
    return this.#shards[shardOf(key)]!.get(key);
  }

  set(key: string, value: V): void {
    const shard = this.#shards[shardOf(key)]!;
    const before = shard.size;
    shard.set(key, value);
    this.#size += shard.size - before;
  }

  delete(key: string): boolean {
    const deleted = this.#shards[shardOf(key)]!.delete(key);
    if (deleted) this.#size -= 1;
    return deleted;
  }
}
