// What a typed task remembers per target, kept in the sender's memory under `tasks/<task>/<target>`.
import { KeyedQueue } from '../_queue.js';
import { slug } from '../_slug.js';
import type { AgentMemory } from '../memory/file.js';
import { normalizeHash } from '../protocol/document.js';
import type { JsonValue } from '../schemas.js';

/** What a task remembers per target (memory key `tasks/<task>/<target>`). */
export type TaskState = {
  uses: number;
  /** Hex hash of the PD the task uses with this target, or null (natural language). */
  protocolHash: string | null;
  /** Fit verdicts of the LLM, per hex hash. */
  verdicts: Record<string, boolean>;
  negotiation?:
    | { outcome: 'agreed'; hash: string; rounds: number; at: string; path?: string }
    | { outcome: 'failed'; error: string; at: string };
};

/** Shared fit verdicts kept per task, the most recent ones. */
const MAX_SHARED_FITS = 200;

function keySlug(text: string): string {
  return slug(text, { keepDots: true, maxLength: 100, fallback: 'default' });
}

/** Task states in memory: read leniently, changed one at a time per key within this process. */
export class TaskStates {
  readonly #memory: AgentMemory;
  readonly #queue = new KeyedQueue();

  constructor(memory: AgentMemory) {
    this.#memory = memory;
  }

  /** The memory key of a task's state with a target (its base URL). */
  key(taskName: string, base: string): string {
    return `tasks/${keySlug(taskName)}/${keySlug(base.replace(/^https?:\/\//, (scheme) => (scheme === 'https://' ? 'https-' : '')))}`;
  }

  /** The memory key of a task's fit verdicts shared by its targets (a PD fits a task whoever serves it). */
  fitsKey(taskName: string): string {
    return `task-fits/${keySlug(taskName)}`;
  }

  /** The task's shared fit verdicts, per hex hash; anything malformed is left out. */
  async fits(taskName: string): Promise<Record<string, boolean>> {
    const saved = await this.#memory.get<Record<string, JsonValue>>(this.fitsKey(taskName));
    const fits: Record<string, boolean> = {};
    if (saved && typeof saved === 'object' && !Array.isArray(saved))
      for (const [hash, verdict] of Object.entries(saved)) if (typeof verdict === 'boolean') fits[hash] = verdict;
    return fits;
  }

  /** Keeps an LLM's fit verdict for every target of the task. */
  keepFit(taskName: string, hash: string, fits: boolean): Promise<void> {
    const key = this.fitsKey(taskName);
    return this.#queue.run(key, async () => {
      const all = await this.fits(taskName);
      delete all[hash];
      all[hash] = fits;
      // Bounded: the PDs a hub or peer offers are not, and the oldest verdicts matter least.
      const hashes = Object.keys(all);
      for (const old of hashes.slice(0, Math.max(0, hashes.length - MAX_SHARED_FITS))) delete all[old];
      await this.#memory.set(key, all);
    });
  }

  /** A task's state as saved; anything malformed reads as its default. */
  async read(key: string): Promise<TaskState> {
    const saved = await this.#memory.get<Record<string, JsonValue>>(key);
    const state: TaskState = { uses: 0, protocolHash: null, verdicts: {} };
    if (!saved || typeof saved !== 'object') return state;
    if (typeof saved.uses === 'number' && Number.isInteger(saved.uses) && saved.uses >= 0) state.uses = saved.uses;
    if (typeof saved.protocolHash === 'string' && normalizeHash(saved.protocolHash))
      state.protocolHash = normalizeHash(saved.protocolHash)!;
    if (saved.verdicts && typeof saved.verdicts === 'object' && !Array.isArray(saved.verdicts)) {
      for (const [hash, verdict] of Object.entries(saved.verdicts))
        if (typeof verdict === 'boolean') state.verdicts[hash] = verdict;
    }
    if (saved.negotiation && typeof saved.negotiation === 'object')
      state.negotiation = saved.negotiation as TaskState['negotiation'];
    return state;
  }

  /** Read-modify-write of a task's state, one at a time per key within this process. */
  update(key: string, change: (state: TaskState) => void): Promise<TaskState> {
    return this.#queue.run(key, async () => {
      const state = await this.read(key);
      change(state);
      await this.#memory.set(key, state as unknown as JsonValue);
      return state;
    });
  }
}
