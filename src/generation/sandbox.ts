// Where a generated module runs: a worker thread (./_sandbox-worker.ts) with a time and memory limit. The build
// that comes first (esbuild, zod only) is ./bundle.ts.
//
// The boundary, honestly: a worker thread is not a security sandbox. It shares the process, so a determined module
// can still reach Node's internals in ways we do not foresee. What the worker gives is robustness against an LLM's
// mistakes: a runaway loop is terminated, a memory hog hits its heap limit, environment variables are absent,
// `fetch` and friends are gone, and the build refuses every import but zod and agora-agents. Human approval is the
// real gate, and it is off only when the owner asks for `autoApprove`.
import { Worker } from 'node:worker_threads';
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ProtocolMetadata } from '../protocol/document.js';
import type { JsonObject, JsonValue } from '../schemas.js';
import { workerModule } from './_worker.js';

// Importable from here as before the build moved to its own file.
export { bundleGeneratedModule, IMPORT_POLICY_ERROR } from './bundle.js';


/** What a sandboxed `handle` needs besides the body: the routine context, tools as functions on this thread. */
export type SandboxContext = {
  conversation: { id: string | null; turn: number; state: JsonObject };
  protocol: { name: string; hash: string; metadata: ProtocolMetadata };
  tools: Record<string, (input: unknown) => Promise<unknown>>;
  logger: Logger;
};

/** The outcome of one sandboxed call; `invalid` when the routine's input schema refused the body. */
export type SandboxResult = { value: JsonValue; state?: JsonObject; invalid?: { issues: string; reply?: JsonValue } };

/** Options of {@link SandboxedModule}. */
export type SandboxOptions = {
  /** Per call, in ms (default 2000): past it the worker is terminated and the next call gets a fresh one. */
  timeoutMs?: number;
  /** The worker's old-generation heap, in MB (default 64). */
  memoryLimitMb?: number;
  /** Bound on loading the module into a fresh worker, in ms (default max(5000, timeoutMs)). */
  loadTimeoutMs?: number;
  /** A name for the worker (shown in inspectors and errors). */
  name?: string;
  /** Idle time after which the worker is stopped, in ms (default 5 minutes); the next call starts a fresh one. */
  idleMs?: number;
};

type CurrentRun = {
  id: number;
  resolve(result: SandboxResult): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
  context: SandboxContext | undefined;
};

/**
 * A bundled generated module in a long-lived worker thread: calls are queued one at a time, each with a time
 * limit that terminates the worker (a fresh one serves the next call); no environment variables; tools are
 * called by message back to this thread. Not a security sandbox: see the note at the top of this file.
 */
export class SandboxedModule {
  readonly #code: string;
  readonly #timeoutMs: number;
  readonly #memoryLimitMb: number;
  readonly #loadTimeoutMs: number;
  readonly #name: string;
  readonly #idleMs: number;
  #idleTimer: NodeJS.Timeout | undefined;
  #worker: Worker | undefined;
  #loading: Promise<Worker> | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #current: CurrentRun | undefined;
  #ids = 0;
  #closed = false;

  constructor(bundledCode: string, options: SandboxOptions = {}) {
    this.#code = bundledCode;
    this.#timeoutMs = options.timeoutMs ?? 2000;
    this.#memoryLimitMb = options.memoryLimitMb ?? 64;
    this.#loadTimeoutMs = options.loadTimeoutMs ?? Math.max(5000, this.#timeoutMs);
    this.#name = options.name ?? 'agora generated routine';
    this.#idleMs = options.idleMs ?? 5 * 60_000;
  }

  /** Calls `handle` (with a context), `buildBody`, `parseReply` or `checkOutput` (output schema → issues or null). */
  run(method: 'handle' | 'buildBody' | 'parseReply' | 'checkOutput', payload: unknown, context?: SandboxContext): Promise<SandboxResult> {
    const call = this.#queue.then(() => this.#run(method, payload, context));
    this.#queue = call.then(
      () => undefined,
      () => undefined,
    );
    return call;
  }

  /** Terminates the worker; later calls fail. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#idleTimer);
    this.#abort(new Error('the routine was unloaded'));
    const worker = this.#worker;
    this.#worker = undefined;
    await worker?.terminate();
    const loading = await this.#loading?.catch(() => undefined);
    await loading?.terminate();
  }

  async #run(method: string, payload: unknown, context: SandboxContext | undefined): Promise<SandboxResult> {
    if (this.#closed) throw new Error('the routine was unloaded');
    clearTimeout(this.#idleTimer);
    const worker = await this.#ready();
    return new Promise<SandboxResult>((resolve, reject) => {
      const id = ++this.#ids;
      const timer = setTimeout(() => {
        // Terminate, not abort: a synchronous loop never looks at a signal.
        this.#abort(new Error(`timed out after ${this.#timeoutMs} ms`));
        if (this.#worker === worker) this.#worker = undefined;
        void worker.terminate();
      }, this.#timeoutMs);
      this.#current = { id, resolve, reject, timer, context };
      worker.ref();
      const message: Record<string, unknown> = { type: 'run', id, method, payload };
      if (context) {
        message.context = {
          conversation: context.conversation,
          protocol: JSON.parse(JSON.stringify(context.protocol)) as unknown,
          tools: Object.keys(context.tools),
        };
      }
      try {
        worker.postMessage(message);
      } catch (error) {
        this.#abort(new Error(`cannot pass the call to the worker: ${describeError(error)}`));
      }
    });
  }

  #abort(error: Error): void {
    const current = this.#current;
    if (!current) return;
    this.#current = undefined;
    clearTimeout(current.timer);
    current.reject(error);
    this.#idle();
  }

  /** Between calls: let the process exit, and stop a worker nobody calls (each holds its own heap and zod). */
  #idle(): void {
    this.#worker?.unref();
    clearTimeout(this.#idleTimer);
    if (this.#closed) return;
    this.#idleTimer = setTimeout(() => {
      const worker = this.#worker;
      if (!worker || this.#current) return;
      this.#worker = undefined;
      void worker.terminate();
    }, this.#idleMs);
    this.#idleTimer.unref();
  }

  #ready(): Promise<Worker> {
    if (this.#worker) return Promise.resolve(this.#worker);
    this.#loading ??= this.#spawn().finally(() => {
      this.#loading = undefined;
    });
    return this.#loading;
  }

  #spawn(): Promise<Worker> {
    return new Promise<Worker>((resolve, reject) => {
      // `env: {}` (not SHARE_ENV): the worker's process.env starts empty. execArgv: [] so a loader such as tsx is
      // not inherited (a slower start, and hooks the module has no business with).
      const worker = new Worker(workerModule('_sandbox-worker'), {
        env: {},
        execArgv: [],
        argv: [],
        name: this.#name,
        resourceLimits: { maxOldGenerationSizeMb: this.#memoryLimitMb, maxYoungGenerationSizeMb: Math.min(16, Math.max(2, this.#memoryLimitMb / 4)), stackSizeMb: 4 },
      });
      const cleanup = () => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      const fail = (error: Error) => {
        cleanup();
        // An 'error' event with no listener would crash the process.
        worker.on('error', () => undefined);
        void worker.terminate();
        reject(error);
      };
      const timer = setTimeout(() => fail(new Error(`the module did not load within ${this.#loadTimeoutMs} ms`)), this.#loadTimeoutMs);
      const onMessage = (message: { type: string; error?: string }) => {
        if (message.type === 'loaded') {
          cleanup();
          if (this.#closed) {
            void worker.terminate();
            reject(new Error('the routine was unloaded'));
            return;
          }
          this.#attach(worker);
          resolve(worker);
        } else if (message.type === 'load-failed') {
          fail(new Error(`the module failed to load: ${message.error ?? 'unknown error'}`));
        }
      };
      const onError = (error: Error) => fail(new Error(`the module failed to load: ${describeError(error)}`));
      const onExit = (code: number) => fail(new Error(`the worker exited with code ${code} while loading the module`));
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
      worker.postMessage({ type: 'load', code: this.#code });
    });
  }

  #attach(worker: Worker): void {
    this.#worker = worker;
    worker.unref();
    worker.on('message', (message: WorkerMessage) => this.#onMessage(worker, message));
    // A worker already replaced (after a timeout) must not fail the run of its successor.
    worker.on('error', (error) => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      // ERR_WORKER_OUT_OF_MEMORY lands here, as does an exception thrown from a timer the module set.
      this.#abort(new Error(`the routine crashed: ${describeError(error)}`));
    });
    worker.on('exit', (code) => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      this.#abort(new Error(`the routine's worker exited with code ${code}`));
    });
  }

  #onMessage(worker: Worker, message: WorkerMessage): void {
    const current = this.#current;
    if (message.type === 'result') {
      if (!current || current.id !== message.id) return;
      this.#current = undefined;
      clearTimeout(current.timer);
      this.#idle();
      if (message.ok) {
        current.resolve({ value: message.value ?? null, ...(message.state ? { state: message.state } : {}), ...(message.invalid ? { invalid: message.invalid } : {}) });
      } else {
        current.reject(new Error(message.error ?? 'the routine failed'));
      }
    } else if (message.type === 'tool') {
      const reply = (result: { ok: true; value: unknown } | { ok: false; error: string }) => {
        // A late answer for a worker that was terminated meanwhile has nobody to go to.
        if (this.#worker === worker) worker.postMessage({ type: 'tool-result', callId: message.callId, ...result });
      };
      const tool = current && current.id === message.runId ? current.context?.tools[message.name] : undefined;
      if (!tool) {
        reply({ ok: false, error: `no tool named "${message.name}"` });
        return;
      }
      Promise.resolve()
        .then(() => tool(message.input))
        .then(
          (value) => reply({ ok: true, value: value === undefined ? null : (JSON.parse(JSON.stringify(value) ?? 'null') as unknown) }),
          (error: unknown) => reply({ ok: false, error: describeError(error) }),
        );
    } else if (message.type === 'log') {
      const logger = current && current.id === message.runId ? current.context?.logger : undefined;
      const level = message.level === 'warn' || message.level === 'error' ? message.level : 'info';
      logger?.[level](String(message.message).slice(0, 2000));
    }
  }
}

type WorkerMessage =
  | { type: 'result'; id: number; ok: boolean; value?: JsonValue; state?: JsonObject; invalid?: { issues: string; reply?: JsonValue }; error?: string }
  | { type: 'tool'; runId: number; callId: number; name: string; input: unknown }
  | { type: 'log'; runId: number; level: string; message: string };
