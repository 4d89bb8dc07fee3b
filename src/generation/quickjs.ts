// Where a generated routine runs: a QuickJS interpreter compiled to WebAssembly (quickjs-emscripten), one
// instance per routine, with its own linear memory capped at the memory limit and an interrupt handler enforcing a
// CPU-time limit. The guest has the ECMAScript built-ins and nothing else: no `process`, no environment, no file
// system, no network, no timers, no module loader; its `eval`, `Function` and `import()` reach only QuickJS. The
// host hands it three functions (a tool call, a log line, the end of a call); everything crosses as JSON text.
//
// Why a WebAssembly memory of our own: QuickJS's own malloc limit is not enforced in aggregate in this build
// (malloc_usable_size is unavailable, so each block counts as 8 bytes: 100 ArrayBuffers of 16 MB pass a 64 MB
// limit). A `WebAssembly.Memory` with a `maximum` counts every byte the guest can reach, ArrayBuffers included.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  RELEASE_SYNC,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
} from 'quickjs-emscripten';
import { z } from 'zod';
import { describeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { ProtocolMetadata } from '../protocol/document.js';
import type { JsonObject, JsonValue } from '../schemas.js';
import { GUEST_PRELUDE, HOST_GLOBAL, wrapBundle } from './_quickjs-guest.js';

/** What a sandboxed `handle` needs besides the body: the routine context, tools as functions on this thread. */
export type SandboxContext = {
  conversation: { id: string | null; turn: number; state: JsonObject };
  protocol: { name: string; hash: string; metadata: ProtocolMetadata };
  tools: Record<string, (input: unknown) => Promise<unknown>>;
  logger: Logger;
};

/** The outcome of one sandboxed call; `invalid` when the routine's input schema refused the body. */
export type SandboxResult = { value: JsonValue; state?: JsonObject; invalid?: { issues: string; reply?: JsonValue } };

/** Options of {@link QuickJSSandbox}. */
export type SandboxOptions = {
  /** Per call, in ms (default 2000), tool calls included: past it the call fails and its context is dropped. */
  timeoutMs?: number;
  /** Computation per call, in ms (default min(timeoutMs, 250)): how long one call may hold the event loop. */
  cpuLimitMs?: number;
  /** The whole WebAssembly memory of the routine, in MB (default 64, at least 24): every allocation counts. */
  memoryLimitMb?: number;
  /** Computation allowed to load the module into a fresh context, in ms (default 1000). */
  loadTimeoutMs?: number;
  /** A name for the routine in errors. */
  name?: string;
  /** Idle time after which the context is dropped, in ms (default 5 minutes); the next call builds a fresh one. */
  idleMs?: number;
};

/** The methods a generated module answers. */
export type SandboxMethod = 'handle' | 'buildBody' | 'parseReply' | 'checkOutput';

// The WebAssembly API as far as we use it (the project's lib settings do not declare it).
type WasmMemory = { readonly buffer: ArrayBuffer };
type WasmModule = object;
const wasmApi = (globalThis as unknown as {
  WebAssembly: { compile(bytes: Uint8Array): Promise<WasmModule>; Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory };
}).WebAssembly;

// The WebAssembly module is compiled once per process; each routine instantiates it with its own memory.
const requireHere = createRequire(import.meta.url);
let compiled: Promise<WasmModule> | undefined;
function compiledQuickJS(): Promise<WasmModule> {
  compiled ??= (async () => {
    const fromPackage = createRequire(requireHere.resolve('quickjs-emscripten'));
    return wasmApi.compile(await readFile(fromPackage.resolve('@jitl/quickjs-wasmfile-release-sync/wasm')));
  })();
  return compiled;
}

const PAGE = 65536;
// The emscripten build starts with 16 MB of linear memory (its static data and stack live there too).
const INITIAL_PAGES = 256;
// Below the emscripten stack (5 MB), so deep recursion is a RangeError, never a WebAssembly trap.
const MAX_STACK_BYTES = 1024 * 1024;
// A context that grew past this share of its memory is dropped after a successful call, to start the next clean.
const HIGH_WATER = 0.75;

// The shape of what the guest reports; its values came out of JSON.parse, so they are JSON by construction.
const resultSchema = z.object({
  value: z.unknown(),
  state: z.record(z.string(), z.unknown()).optional(),
  invalid: z.object({ issues: z.string(), reply: z.unknown().optional() }).optional(),
});

type Instance = { runtime: QuickJSRuntime; context: QuickJSContext; memory: WasmMemory; run: QuickJSHandle; settle: QuickJSHandle; deadline: number };

type Call = {
  id: number;
  instance: Instance;
  context: SandboxContext | undefined;
  cpuLeft: number;
  resolve(result: SandboxResult): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout | undefined;
};

/**
 * A bundled generated module (see bundleForQuickJS) in its own QuickJS context: calls are queued one at a time,
 * each with a time, CPU and memory limit; a call that breaks a limit or throws fails, and the next call gets a fresh
 * context. A drop-in for the worker-thread SandboxedModule (same `run`, `close`).
 */
export class QuickJSSandbox {
  readonly #code: string;
  readonly #timeoutMs: number;
  readonly #cpuLimitMs: number;
  readonly #memoryBytes: number;
  readonly #loadTimeoutMs: number;
  readonly #name: string;
  readonly #idleMs: number;
  #instance: Instance | undefined;
  #loading: Promise<Instance> | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #current: Call | undefined;
  #ids = 0;
  #lastUsed = 0;
  #idleTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(bundledCode: string, options: SandboxOptions = {}) {
    this.#code = bundledCode;
    this.#timeoutMs = options.timeoutMs ?? 2000;
    this.#cpuLimitMs = options.cpuLimitMs ?? Math.min(this.#timeoutMs, 250);
    this.#memoryBytes = Math.max(24, options.memoryLimitMb ?? 64) * 1024 * 1024;
    this.#loadTimeoutMs = options.loadTimeoutMs ?? 1000;
    this.#name = options.name ?? 'generated routine';
    this.#idleMs = options.idleMs ?? 5 * 60_000;
  }

  /** Calls `handle` (with a context), `buildBody`, `parseReply` or `checkOutput` (output schema → issues or null). */
  run(method: SandboxMethod, payload: unknown, context?: SandboxContext): Promise<SandboxResult> {
    const call = this.#queue.then(() => this.#run(method, payload, context));
    this.#queue = call.then(
      () => undefined,
      () => undefined,
    );
    return call;
  }

  /** Drops the context; later calls fail. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#idleTimer);
    this.#fail(new Error('the routine was unloaded'));
    const instance = this.#instance;
    this.#instance = undefined;
    if (instance) this.#dispose(instance);
    const loading = await this.#loading?.catch(() => undefined);
    if (loading) this.#dispose(loading);
  }

  async #run(method: SandboxMethod, payload: unknown, context: SandboxContext | undefined): Promise<SandboxResult> {
    if (this.#closed) throw new Error('the routine was unloaded');
    const instance = await this.#ready();
    const payloadText = JSON.stringify(payload ?? null);
    const contextText = context
      ? JSON.stringify({ conversation: context.conversation, protocol: context.protocol, tools: Object.keys(context.tools) })
      : '';
    return new Promise<SandboxResult>((resolve, reject) => {
      const call: Call = { id: ++this.#ids, instance, context, cpuLeft: this.#cpuLimitMs, resolve, reject, timer: undefined };
      this.#current = call;
      const vm = instance.context;
      const args = [vm.newNumber(call.id), vm.newString(method), vm.newString(payloadText), vm.newString(contextText)];
      this.#enter(call, () => vm.callFunction(instance.run, vm.undefined, ...args));
      for (const handle of args) if (handle.alive && this.#instance === instance) handle.dispose();
      // Most routines answer within that first slice; a timer only for those that wait on a tool.
      if (this.#current === call) call.timer = setTimeout(() => this.#fail(new Error(`timed out after ${this.#timeoutMs} ms`)), this.#timeoutMs);
    });
  }

  /** Runs guest code for the current call under its remaining CPU time, then its pending jobs; a breach fails it. */
  #enter(call: Call, step: () => { error?: QuickJSHandle; value?: unknown }): void {
    const instance = call.instance;
    const started = performance.now();
    instance.deadline = Date.now() + Math.max(1, call.cpuLeft);
    let failure: Error | undefined;
    try {
      const first = step();
      const jobs = first.error ? first : instance.runtime.executePendingJobs();
      if (jobs.error) failure = this.#describeBreach(instance, jobs.error);
      else (jobs.value as QuickJSHandle | undefined)?.dispose?.();
      if (!first.error && first.value) (first.value as QuickJSHandle).dispose();
    } catch (error) {
      // A WebAssembly trap or an "Aborted()" of the emscripten runtime: this instance is finished.
      failure = new Error(`the routine crashed the sandbox: ${describeError(error)}`);
    } finally {
      instance.deadline = 0;
      call.cpuLeft -= performance.now() - started;
    }
    if (failure && this.#current === call) this.#fail(failure);
  }

  #describeBreach(instance: Instance, error: QuickJSHandle): Error {
    if (Date.now() >= instance.deadline) return new Error(`exceeded its CPU time limit of ${this.#cpuLimitMs} ms`);
    let message = 'unknown error';
    try {
      // The deadline is still set: a hostile getter on the error is interrupted like any other guest code.
      const text = instance.context.dump(error) as { name?: unknown; message?: unknown } | unknown;
      message = typeof text === 'object' && text !== null ? `${String((text as { name?: unknown }).name)}: ${String((text as { message?: unknown }).message)}` : String(text);
    } catch {
      // Keep the generic message: the instance is dropped either way.
    }
    return /out of memory/i.test(message) || instance.memory.buffer.byteLength > this.#memoryBytes * HIGH_WATER ? this.#memoryError() : new Error(message.slice(0, 500));
  }

  /** A failure the guest reported: a limit it hit (even when caught and rethrown by the routine), else its error. */
  #classify(instance: Instance, text: string): Error {
    if (/^InternalError: interrupted$/.test(text) && Date.now() >= instance.deadline) return new Error(`exceeded its CPU time limit of ${this.#cpuLimitMs} ms`);
    // Out of memory, QuickJS may not even manage to build the error object (the guest then reports "null").
    if (/out of memory/i.test(text) || instance.memory.buffer.byteLength > this.#memoryBytes * HIGH_WATER) return this.#memoryError();
    return new Error(text.slice(0, 2000));
  }

  #memoryError(): Error {
    return new Error(`exceeded its memory limit of ${Math.round(this.#memoryBytes / 1048576)} MB (out of memory)`);
  }

  /** The end of a call, as the guest reports it. */
  #done(instance: Instance, runId: number, ok: boolean, text: string): void {
    const call = this.#current;
    if (!call || call.id !== runId || call.instance !== instance) return;
    if (!ok) {
      this.#fail(this.#classify(instance, text));
      return;
    }
    const parsed = resultSchema.safeParse(safeJson(text));
    if (!parsed.success) {
      this.#fail(new Error(`the routine's result is malformed: ${z.prettifyError(parsed.error)}`));
      return;
    }
    this.#finish(call);
    // A context that grew close to its limit starts the next call fresh rather than fail it.
    if (instance.memory.buffer.byteLength > this.#memoryBytes * HIGH_WATER) this.#drop(instance);
    const { value, state, invalid } = parsed.data;
    call.resolve({ value: value as JsonValue, ...(state ? { state: state as JsonObject } : {}), ...(invalid ? { invalid: invalid as SandboxResult['invalid'] & object } : {}) });
  }

  /** Fails the current call and drops its context: whatever the guest did, the next call starts from scratch. */
  #fail(error: Error): void {
    const call = this.#current;
    if (!call) return;
    this.#finish(call);
    this.#drop(call.instance);
    call.reject(new Error(`${this.#name}: ${error.message}`));
  }

  #finish(call: Call): void {
    this.#current = undefined;
    clearTimeout(call.timer);
    this.#lastUsed = Date.now();
    this.#armIdle();
  }

  /** Forgets an instance without touching it: after a breach its state is not trusted, and the GC frees its memory. */
  #drop(instance: Instance): void {
    if (this.#instance === instance) this.#instance = undefined;
  }

  #dispose(instance: Instance): void {
    try {
      instance.run.dispose();
      instance.settle.dispose();
      instance.context.dispose();
      instance.runtime.dispose();
    } catch {
      // A runtime that still holds objects asserts on dispose; dropping it is enough (its memory goes with it).
    }
  }

  #armIdle(): void {
    if (this.#idleTimer || this.#closed) return;
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = undefined;
      if (this.#current || !this.#instance) return;
      if (Date.now() - this.#lastUsed >= this.#idleMs) {
        const instance = this.#instance;
        this.#instance = undefined;
        this.#dispose(instance);
      } else this.#armIdle();
    }, this.#idleMs);
    this.#idleTimer.unref();
  }

  #ready(): Promise<Instance> {
    if (this.#instance) return Promise.resolve(this.#instance);
    this.#loading ??= this.#load().finally(() => {
      this.#loading = undefined;
    });
    return this.#loading;
  }

  async #load(): Promise<Instance> {
    const memory = new wasmApi.Memory({ initial: INITIAL_PAGES, maximum: Math.max(INITIAL_PAGES, Math.floor(this.#memoryBytes / PAGE)) });
    const module = await compiledQuickJS();
    const wasm = await newQuickJSWASMModuleFromVariant(newVariant(RELEASE_SYNC, { wasmModule: module, wasmMemory: memory } as Parameters<typeof newVariant>[1]));
    if (this.#closed) throw new Error('the routine was unloaded');
    const runtime = wasm.newRuntime();
    // The malloc limit catches single huge allocations with a clean error; the memory's maximum catches the rest.
    runtime.setMemoryLimit(this.#memoryBytes);
    runtime.setMaxStackSize(MAX_STACK_BYTES);
    const context = runtime.newContext();
    const instance = { runtime, context, memory, deadline: 0 } as Instance;
    runtime.setInterruptHandler(() => Date.now() > instance.deadline);
    const host = context.newObject();
    const tool = context.newFunction('tool', (runId, callId, name, input) => {
      this.#tool(instance, context.getNumber(runId), context.getNumber(callId), context.getString(name), context.getString(input));
    });
    const done = context.newFunction('done', (runId, ok, text) => {
      this.#done(instance, context.getNumber(runId), context.dump(ok) === true, context.getString(text));
    });
    const log = context.newFunction('log', (runId, level, message) => {
      this.#log(instance, context.getNumber(runId), context.getString(level), context.getString(message));
    });
    for (const [key, handle] of [['tool', tool], ['done', done], ['log', log]] as const) {
      context.setProp(host, key, handle);
      handle.dispose();
    }
    context.setProp(context.global, HOST_GLOBAL, host);
    host.dispose();
    const failLoad = (what: string, error: QuickJSHandle) => {
      const breach = this.#describeBreach(instance, error);
      return new Error(`${this.#name}: the module failed to load (${what}): ${breach.message}`);
    };
    instance.deadline = Date.now() + this.#loadTimeoutMs;
    try {
      const prelude = context.evalCode(GUEST_PRELUDE, 'agora-prelude.js', { type: 'global' });
      if (prelude.error) throw failLoad('prelude', prelude.error);
      instance.run = context.getProp(prelude.value, 'run');
      instance.settle = context.getProp(prelude.value, 'settle');
      const load = context.getProp(prelude.value, 'load');
      prelude.value.dispose();
      const evaluated = context.evalCode(wrapBundle(this.#code), 'routine.js', { type: 'global' });
      if (evaluated.error) throw failLoad('evaluation', evaluated.error);
      const loaded = context.callFunction(load, context.undefined, evaluated.value);
      evaluated.value.dispose();
      load.dispose();
      if (loaded.error) throw failLoad('default export', loaded.error);
      loaded.value.dispose();
    } catch (error) {
      throw error instanceof Error && error.message.startsWith(this.#name) ? error : new Error(`${this.#name}: the module failed to load: ${describeError(error)}`);
    } finally {
      instance.deadline = 0;
    }
    if (this.#closed) {
      this.#dispose(instance);
      throw new Error('the routine was unloaded');
    }
    this.#instance = instance;
    return instance;
  }

  /** A tool call from the guest: run on this thread, its answer settled back into the guest under the CPU limit. */
  #tool(instance: Instance, runId: number, callId: number, name: string, inputText: string): void {
    const call = this.#current;
    const tool = call && call.id === runId && call.instance === instance ? call.context?.tools[name] : undefined;
    const answer = (ok: boolean, text: string) => {
      // A late answer, after the call failed or timed out, has nobody to go to.
      if (this.#current !== call || !call || this.#instance !== instance) return;
      const vm = instance.context;
      const args = [vm.newNumber(callId), vm.newString(text)];
      this.#enter(call, () => vm.callFunction(instance.settle, vm.undefined, args[0]!, ok ? vm.true : vm.false, args[1]!));
      if (this.#instance === instance) for (const handle of args) if (handle.alive) handle.dispose();
    };
    if (!tool) {
      queueMicrotask(() => answer(false, `no tool named "${name}"`));
      return;
    }
    Promise.resolve()
      .then(() => tool(JSON.parse(inputText) as unknown))
      .then(
        (value) => answer(true, JSON.stringify(value === undefined ? null : value) ?? 'null'),
        (error: unknown) => answer(false, error instanceof Error ? error.message : describeError(error)),
      )
      .catch((error: unknown) => answer(false, `the tool's answer is not JSON: ${describeError(error)}`));
  }

  #log(instance: Instance, runId: number, level: string, message: string): void {
    const call = this.#current;
    if (!call || call.id !== runId || call.instance !== instance) return;
    const method = level === 'warn' || level === 'error' ? level : 'info';
    call.context?.logger[method](message.slice(0, 2000));
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
