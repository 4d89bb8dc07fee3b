// Internal: a process's copy of what a hub store holds (the directory's agents, the catalogue's documents), kept in
// step with the store's version so several hubs sharing one Redis see each other's writes: by the records that
// changed when the store can say which, by a full reload otherwise.
import type { HubStore } from './store.js';

/**
 * Applies the store's changes after `since` to the copy and returns the version the copy now holds, or undefined when
 * the store no longer remembers changes that far back (the view reloads everything).
 */
export type ApplyChanges = (since: number) => Promise<number | undefined>;

/** Updates a copy when the store's version moved, and takes its own writes without reading them back. */
export class StoreView {
  readonly #store: Pick<HubStore, 'version'>;
  readonly #reload: () => Promise<void>;
  readonly #apply: ApplyChanges | undefined;
  #version = -1;
  /** The refresh under way, and the one that callers arriving meanwhile share (it starts after the current one). */
  #running: Promise<void> | undefined;
  #next: Promise<void> | undefined;

  /**
   * `reload` replaces the whole copy with what the store holds now; `apply`, when given, updates it by what changed.
   */
  constructor(store: Pick<HubStore, 'version'>, reload: () => Promise<void>, apply?: ApplyChanges) {
    this.#store = store;
    this.#reload = reload;
    this.#apply = apply;
  }

  /**
   * Brings the copy in step when another process (or this one) changed the store; cheap (one read) when nothing did.
   * Refreshes never overlap: a caller arriving while one runs shares the next, which starts after it.
   */
  refresh(): Promise<void> {
    if (this.#next) return this.#next;
    const next: Promise<void> = (this.#running ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => {
        this.#next = undefined;
        this.#running = next;
        return this.#refreshOnce();
      })
      .finally(() => {
        if (this.#running === next) this.#running = undefined;
      });
    this.#next = next;
    return next;
  }

  async #refreshOnce(): Promise<void> {
    const version = await this.#store.version();
    if (version === this.#version) return;
    // A store that went back (emptied, replaced) cannot say what changed: read it all.
    if (this.#apply !== undefined && this.#version >= 0 && version > this.#version) {
      const reached = await this.#apply(this.#version);
      if (reached !== undefined) {
        this.#version = reached;
        return;
      }
    }
    await this.#reload();
    this.#version = version;
  }

  /**
   * Runs a write to the store; when it `changed` the store and was the only write since the copy was in step, the
   * copy takes the new version (the caller applies the write to it) rather than read it back at the next refresh.
   */
  async write<Result>(put: () => Promise<Result>, changed: (result: Result) => boolean): Promise<Result> {
    const before = await this.#store.version();
    const result = await put();
    if (changed(result) && this.#version === before && (await this.#store.version()) === before + 1)
      this.#version = before + 1;
    return result;
  }
}
