// A sandbox's QuickJS instance kept warm between calls: loaded once (calls that ask meanwhile share the load),
// forgotten after a breach (its state is not trusted), disposed once idle for long enough or at close.
import { disposeInstance, type Instance } from './_quickjs-instance.js';

/** The one instance of a sandbox, as it comes and goes. */
export class WarmInstance {
  readonly #load: () => Promise<Instance>;
  readonly #idleMs: number;
  readonly #busy: () => boolean;
  #instance: Instance | undefined;
  #loading: Promise<Instance> | undefined;
  #lastUsed = 0;
  #idleTimer: NodeJS.Timeout | undefined;
  #closed = false;

  /** @param busy whether a call is under way (an idle instance is disposed only between calls) */
  constructor(load: () => Promise<Instance>, idleMs: number, busy: () => boolean) {
    this.#load = load;
    this.#idleMs = idleMs;
    this.#busy = busy;
  }

  /** The instance now, if one is loaded. */
  get current(): Instance | undefined {
    return this.#instance;
  }

  /** Whether {@link close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The instance, loaded first when there is none. */
  ready(): Promise<Instance> {
    if (this.#instance) return Promise.resolve(this.#instance);
    this.#loading ??= this.#loaded().finally(() => {
      this.#loading = undefined;
    });
    return this.#loading;
  }

  /** Forgets an instance without touching it: after a breach its state is not trusted, and the GC frees its memory. */
  drop(instance: Instance): void {
    if (this.#instance === instance) this.#instance = undefined;
  }

  /** Notes a call's end: the idle clock starts again. */
  used(): void {
    this.#lastUsed = Date.now();
    this.#armIdle();
  }

  /** Marks the holder closed (later loads fail) and stops its idle timer; {@link dispose} then frees the instance. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#idleTimer);
  }

  /** Frees the instance, once any load under way has ended. */
  async dispose(): Promise<void> {
    const instance = this.#instance;
    this.#instance = undefined;
    if (instance) disposeInstance(instance);
    await this.#loading?.catch(() => undefined);
  }

  async #loaded(): Promise<Instance> {
    const instance = await this.#load();
    if (this.#closed) {
      disposeInstance(instance);
      throw new Error('the routine was unloaded');
    }
    this.#instance = instance;
    return instance;
  }

  #armIdle(): void {
    if (this.#idleTimer || this.#closed) return;
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = undefined;
      if (this.#busy() || !this.#instance) return;
      if (Date.now() - this.#lastUsed >= this.#idleMs) {
        const instance = this.#instance;
        this.#instance = undefined;
        disposeInstance(instance);
      } else this.#armIdle();
    }, this.#idleMs);
    this.#idleTimer.unref();
  }
}
