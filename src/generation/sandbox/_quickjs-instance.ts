// Building one QuickJS instance for the sandbox (./quickjs.ts): a WebAssembly instance of quickjs-emscripten with its
// own capped linear memory, a runtime with a stack cap and an interrupt handler, the prelude and the bundled module,
// all evaluated under a load budget (no host function is installed: see ./_quickjs-guest.ts). Running calls is the
// sandbox's business.
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
import { describeError } from '../../errors.js';
import { guestCaller, type GuestCaller } from './_quickjs-call.js';
import { beginSlice, cpuMeter, shouldInterrupt, type CpuClock, type CpuMeter, type CpuSlice } from './_cpu-slice.js';
import { GUEST_PRELUDE, wrapBundle, type GuestStatics } from './_quickjs-guest.js';

// The WebAssembly API as far as we use it (the project's lib settings do not declare it).
type WasmMemory = { readonly buffer: ArrayBuffer };
type WasmModule = object;
const wasmApi = (
  globalThis as unknown as {
    WebAssembly: {
      compile(bytes: Uint8Array): Promise<WasmModule>;
      Memory: new (descriptor: { initial: number; maximum: number }) => WasmMemory;
    };
  }
).WebAssembly;

/**
 * One loaded module: its runtime and context, its memory, the guest's `run`/`settle`/`flush`, and the running slice.
 */
export type Instance = GuestStatics & {
  runtime: QuickJSRuntime;
  context: QuickJSContext;
  memory: WasmMemory;
  run: QuickJSHandle;
  settle: QuickJSHandle;
  flush: QuickJSHandle;
  /** How run, settle and flush are called (see ./_quickjs-call.ts). */
  caller: GuestCaller;
  /** The CPU budget of the guest code running now (see ./_cpu-slice.ts); undefined when none should be running. */
  slice: CpuSlice | undefined;
  /** The CPU clock and its last reading, for this instance's slices. */
  meter: CpuMeter;
};

/** The limits an instance is built with. */
export type InstanceLimits = {
  memoryBytes: number;
  loadTimeoutMs: number;
  cpuLimitMs: number;
  name: string;
  cpuClock: CpuClock;
};

/** A context that grew past this share of its memory is dropped after a successful call, to start the next clean. */
export const HIGH_WATER = 0.75;

const PAGE = 65536;
// The wall-clock backstop of a load, as a multiple of its CPU budget.
const LOAD_WALL_FACTOR = 5;
// The emscripten build starts with 16 MB of linear memory (its static data and stack live there too).
const INITIAL_PAGES = 256;
// Below the emscripten stack (5 MB), so deep recursion is a RangeError, never a WebAssembly trap.
const MAX_STACK_BYTES = 1024 * 1024;

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

/** The guest's error as one line ("TypeError: …"), read under the slice still set (a getter may be hostile). */
export function guestErrorText(instance: Instance, error: QuickJSHandle): string {
  try {
    const dumped = instance.context.dump(error) as unknown;
    if (typeof dumped !== 'object' || dumped === null) return String(dumped);
    const { name, message } = dumped as { name?: unknown; message?: unknown };
    return `${String(name)}: ${String(message)}`;
  } catch {
    return 'unknown error';
  }
}

/**
 * A guest failure in the sandbox's words: the CPU limit (or the wall-clock backstop) once the interrupt handler
 * stopped the guest (for an error the guest reported itself, only if it is the interruption, which a routine may
 * catch and rethrow), the memory limit when QuickJS ran out or the memory is nearly full (out of memory, QuickJS may
 * not even build the error object), else the guest's own message. Called while the slice is still set.
 */
export function breachError(instance: Instance, text: string, limits: InstanceLimits, reported: boolean): Error {
  const breach = instance.slice?.breach;
  if (breach && (!reported || text === 'InternalError: interrupted')) {
    return new Error(
      breach === 'cpu'
        ? `exceeded its CPU time limit of ${limits.cpuLimitMs} ms`
        : `timed out after ${Math.round(instance.slice!.wallMs)} ms of computation`,
    );
  }
  if (/out of memory/i.test(text) || instance.memory.buffer.byteLength > limits.memoryBytes * HIGH_WATER) {
    return new Error(`exceeded its memory limit of ${Math.round(limits.memoryBytes / 1048576)} MB (out of memory)`);
  }
  return new Error(text.slice(0, reported ? 2000 : 500));
}

/** Frees an instance; a runtime that still holds objects asserts on dispose, and dropping it is then enough. */
export function disposeInstance(instance: Instance): void {
  try {
    instance.run.dispose();
    instance.settle.dispose();
    instance.flush.dispose();
    instance.caller.dispose();
    instance.context.dispose();
    instance.runtime.dispose();
  } catch {
    // Its memory goes with the WebAssembly instance once nothing refers to it.
  }
}

/**
 * Instantiates QuickJS with a fresh memory and evaluates the prelude and the bundled
 * module under `loadTimeoutMs` of computation. `describeLoadFailure` turns a guest error into the sandbox's words.
 */
export async function instantiate(
  bundledCode: string,
  limits: InstanceLimits,
  describeLoadFailure: (instance: Instance, error: QuickJSHandle) => Error,
): Promise<Instance> {
  const memory = new wasmApi.Memory({
    initial: INITIAL_PAGES,
    maximum: Math.max(INITIAL_PAGES, Math.floor(limits.memoryBytes / PAGE)),
  });
  const module = await compiledQuickJS();
  const wasm = await newQuickJSWASMModuleFromVariant(
    newVariant(RELEASE_SYNC, { wasmModule: module, wasmMemory: memory } as Parameters<typeof newVariant>[1]),
  );
  const runtime = wasm.newRuntime();
  // The malloc limit catches single huge allocations with a clean error; the memory's maximum catches the rest.
  runtime.setMemoryLimit(limits.memoryBytes);
  runtime.setMaxStackSize(MAX_STACK_BYTES);
  const context = runtime.newContext();
  const caller = guestCaller(wasm, context, memory);
  const instance = {
    runtime,
    context,
    memory,
    caller,
    slice: undefined,
    meter: cpuMeter(limits.cpuClock),
    statics: undefined,
    toolNames: [] as readonly string[],
  } as Instance;
  runtime.setInterruptHandler(() => shouldInterrupt(instance.slice, instance.meter));
  const failLoad = (what: string, error: QuickJSHandle) =>
    new Error(`${limits.name}: the module failed to load (${what}): ${describeLoadFailure(instance, error).message}`);
  // Loading is computation only: its CPU budget, and a wall-clock backstop for a machine under heavy load.
  instance.slice = beginSlice(limits.loadTimeoutMs, limits.loadTimeoutMs * LOAD_WALL_FACTOR, instance.meter);
  try {
    const prelude = context.evalCode(GUEST_PRELUDE, 'agora-prelude.js', { type: 'global' });
    if (prelude.error) throw failLoad('prelude', prelude.error);
    instance.run = context.getProp(prelude.value, 'run');
    instance.settle = context.getProp(prelude.value, 'settle');
    instance.flush = context.getProp(prelude.value, 'flush');
    const load = context.getProp(prelude.value, 'load');
    prelude.value.dispose();
    const evaluated = context.evalCode(wrapBundle(bundledCode), 'routine.js', { type: 'global' });
    if (evaluated.error) throw failLoad('evaluation', evaluated.error);
    const loaded = context.callFunction(load, context.undefined, evaluated.value);
    evaluated.value.dispose();
    load.dispose();
    if (loaded.error) throw failLoad('default export', loaded.error);
    loaded.value.dispose();
  } catch (error) {
    throw error instanceof Error && error.message.startsWith(limits.name)
      ? error
      : new Error(`${limits.name}: the module failed to load: ${describeError(error)}`);
  } finally {
    instance.slice = undefined;
  }
  return instance;
}
