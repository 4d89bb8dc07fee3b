import { readdir, readFile, rm } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { writeFileAtomic } from '../_files.js';
import { KeyedQueue } from '../_queue.js';
import { AgoraError } from '../errors.js';
import type { JsonValue } from '../schemas.js';

/**
 * What an agent learns and keeps across restarts: documents fetched from sources, suitability verdicts,
 * usage counters, routine approvals. Keys are `/`-separated paths of `[A-Za-z0-9._-]` segments.
 * Implementations: {@link FileMemory} (`<agent>/.agora/`, default) and `RedisMemory` (shared by processes).
 */
export interface AgentMemory {
  get<T extends JsonValue = JsonValue>(key: string): Promise<T | undefined>;
  set(key: string, value: JsonValue): Promise<void>;
  delete(key: string): Promise<void>;
  /** Keys under a prefix (`documents/` lists `documents/<hash>`). */
  keys(prefix: string): Promise<string[]>;
  /** Adds to a counter atomically and returns its new value. */
  increment(key: string, by?: number): Promise<number>;
  close(): Promise<void>;
  /** Whether other processes share it (Redis): then a value read before may have changed since. */
  readonly shared?: boolean;
}

const KEY = /^[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)*$/;

/** Checks a memory key: path segments only, no `..`. */
export function checkKey(key: string): string {
  if (!KEY.test(key) || key.split('/').some((segment) => segment === '.' || segment === '..')) {
    throw new AgoraError('INVALID_ARGUMENT', `Invalid memory key: ${JSON.stringify(key)}`);
  }
  return key;
}

/** The default memory: one JSON file per key under `<agent>/.agora/`, written atomically. */
export class FileMemory implements AgentMemory {
  readonly root: string;
  /** Serializes read-modify-write per key within this process. */
  readonly #queue = new KeyedQueue<string>();

  constructor(root: string) {
    this.root = root;
  }

  #path(key: string): string {
    return join(this.root, `${checkKey(key)}.json`);
  }

  async get<T extends JsonValue = JsonValue>(key: string): Promise<T | undefined> {
    try {
      return JSON.parse(await readFile(this.#path(key), 'utf8')) as T;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      if (error instanceof SyntaxError) return undefined;
      throw error;
    }
  }

  async set(key: string, value: JsonValue): Promise<void> {
    await this.#queue.run(key, () => writeFileAtomic(this.#path(key), `${JSON.stringify(value, null, 2)}\n`));
  }

  async delete(key: string): Promise<void> {
    await this.#queue.run(key, () => rm(this.#path(key), { force: true }));
  }

  async keys(prefix: string): Promise<string[]> {
    const base = prefix.replace(/\/+$/, '');
    const folder = base ? join(this.root, checkKey(base)) : this.root;
    const found: string[] = [];
    const walk = async (directory: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(directory, { withFileTypes: true });
      } catch {
        return;
      }
      for (const entry of entries) {
        const full = join(directory, entry.name);
        if (entry.isDirectory()) await walk(full);
        else if (entry.name.endsWith('.json'))
          found.push(relative(this.root, full).split(sep).join('/').slice(0, -'.json'.length));
      }
    };
    await walk(folder);
    return found.sort();
  }

  async increment(key: string, by = 1): Promise<number> {
    return this.#queue.run(key, async () => {
      const current = await this.get(key);
      const next = (typeof current === 'number' ? current : 0) + by;
      await writeFileAtomic(this.#path(key), `${next}\n`);
      return next;
    });
  }

  async close(): Promise<void> {}
}

/** A memory held in this process only (tests, ephemeral agents). */
export class InMemoryMemory implements AgentMemory {
  readonly #values = new Map<string, JsonValue>();

  async get<T extends JsonValue = JsonValue>(key: string): Promise<T | undefined> {
    const value = this.#values.get(checkKey(key));
    return value === undefined ? undefined : (structuredClone(value) as T);
  }

  async set(key: string, value: JsonValue): Promise<void> {
    this.#values.set(checkKey(key), structuredClone(value));
  }

  async delete(key: string): Promise<void> {
    this.#values.delete(key);
  }

  async keys(prefix: string): Promise<string[]> {
    return [...this.#values.keys()].filter((key) => key.startsWith(prefix)).sort();
  }

  async increment(key: string, by = 1): Promise<number> {
    const current = this.#values.get(checkKey(key));
    const next = (typeof current === 'number' ? current : 0) + by;
    this.#values.set(key, next);
    return next;
  }

  async close(): Promise<void> {}
}
