// Internal: a process's copy of what a hub store holds (the directory's agents, the catalogue's documents), kept in
// step with the store's version so several hubs sharing one Redis see each other's writes.
import type { HubStore } from './store.js';

/** Reloads a copy when the store's version moved, and takes its own writes without a reload. */
export class StoreView {
  readonly #store: Pick<HubStore, 'version'>;
  readonly #reload: () => Promise<void>;
  #version = -1;

  /** `reload` replaces the whole copy with what the store holds now. */
  constructor(store: Pick<HubStore, 'version'>, reload: () => Promise<void>) {
    this.#store = store;
    this.#reload = reload;
  }

  /** Reloads the copy when another process (or this one) changed the store; cheap (one read) when nothing did. */
  async refresh(): Promise<void> {
    const version = await this.#store.version();
    if (version === this.#version) return;
    await this.#reload();
    this.#version = version;
  }

  /**
   * Runs a write to the store; when it `changed` the store and was the only write since the copy was in step, the
   * copy takes the new version (the caller applies the write to it) rather than reload everything at the next refresh.
   */
  async write<Result>(put: () => Promise<Result>, changed: (result: Result) => boolean): Promise<Result> {
    const before = await this.#store.version();
    const result = await put();
    if (changed(result) && this.#version === before && (await this.#store.version()) === before + 1) this.#version = before + 1;
    return result;
  }
}
