// How the sandbox (./quickjs.ts) calls the prelude's run, settle and flush (./_quickjs-guest.ts): through
// quickjs-emscripten's FFI rather than its handle API. newString and callFunction allocated the text and an argument
// array in the guest's memory, wrapped the result in a handle and a result object, and freed it all again: ~2 µs of
// host time a call, three calls per query with a tool (measured: callFunction+dispose 1.1-1.5 µs, QTS_Call+free
// 0.1-0.3 µs; newString+dispose 1.2 µs, written here 0.5 µs). Here the text and the argument pointer are written
// into one buffer reserved at load, and the result, always a string, is read and freed at once.
//
// The guest's pending jobs (promise reactions) are run the same way: the library's executePendingJobs allocated a
// pointer, wrapped the result in handles and read its type as a string on every call.
//
// The FFI is the library's own (QuickJSWASMModule#getFFI). What is read past its public types: the context's
// JSContext and JSRuntime pointers (their `ctx` and `rt` fields, protected in the types) and the tag of a value
// (see isNumberTag): all checked when the instance is built, so a library that changed them fails every load loudly
// rather than any call quietly.
import type { QuickJSContext, QuickJSHandle, QuickJSWASMModule } from 'quickjs-emscripten';

// The FFI functions used here (pointers are numbers into the guest's memory).
type Ffi = {
  QTS_Call(ctx: number, fn: number, thisValue: number, argc: number, argv: number): number;
  QTS_ResolveException(ctx: number, value: number): number;
  QTS_GetString(ctx: number, value: number): number;
  QTS_FreeCString(ctx: number, chars: number): void;
  QTS_FreeValuePointer(ctx: number, value: number): void;
  QTS_Dump(ctx: number, value: number): number;
  QTS_GetArrayBuffer(ctx: number, value: number): number;
  QTS_NewString(ctx: number, chars: number): number;
  QTS_IsJobPending(rt: number): number;
  QTS_ExecutePendingJob(rt: number, maxJobs: number, lastJobContext: number): number;
  QTS_FreeValuePointerRuntime(rt: number, value: number): void;
};

// QuickJS on wasm32 keeps a value in 64 bits (NaN boxing): the high 32 bits are its tag, and any other high word is
// a float's. Tags between JS_TAG_FIRST (-11) and JS_TAG_FLOAT64 (7) are the other kinds (an object is -1, an
// integer 0); checked on every context built, so a library built otherwise fails every load loudly.
const TAG_FIRST = -11;
const TAG_FLOAT64 = 7;
const TAG_INT = 0;
const TAG_OBJECT = -1;
const TAG_UNDEFINED = 3;
function isNumberTag(tag: number): boolean {
  return tag === TAG_INT || (tag - TAG_FIRST) >>> 0 >= TAG_FLOAT64 - TAG_FIRST;
}

// The reserved buffer: the argument pointer at its start, then the text, NUL-terminated. A longer text (a large
// body) goes through newString: keeping a buffer that large would hold guest memory for nothing.
const TEXT_AT = 8;
const BUFFER_BYTES = 16 * 1024;

/** A call's result: the string the prelude returned, or the pointer of the error it threw (to read or free). */
export type GuestCallResult = { text: string; error?: undefined } | { error: number; text?: undefined };

/** Calls into one guest, and reads or frees the errors they return. */
export type GuestCaller = {
  /** Calls `fn`, a prelude function that returns a string, with `text` or no argument. */
  call(fn: QuickJSHandle, text?: string): GuestCallResult;
  /**
   * Runs the guest's pending jobs (promise reactions) until none is left: false when there was none, true when they
   * ran, or the pointer of the error that stopped them (an interrupt, memory running out), to read or free.
   */
  runJobs(): boolean | number;
  /**
   * The guest error at `pointer` as one line ("TypeError: …"), then frees it; call it under a CPU slice (its getters
   * are guest code).
   */
  errorText(pointer: number): string;
  /** Frees an error unread. */
  free(pointer: number): void;
  /** Frees the reserved buffer. */
  dispose(): void;
};

/** A caller for `context`, whose guest memory is `memory`. */
export function guestCaller(
  wasm: QuickJSWASMModule,
  context: QuickJSContext,
  memory: { readonly buffer: ArrayBuffer },
): GuestCaller {
  const ffi = wasm.getFFI() as unknown as Ffi;
  const ctx = (context as unknown as { ctx?: { value?: unknown } }).ctx?.value;
  const rt = (context.runtime as unknown as { rt?: { value?: unknown } }).rt?.value;
  if (typeof ctx !== 'number' || ctx === 0 || typeof rt !== 'number' || rt === 0)
    throw new Error('quickjs-emscripten no longer has the context and runtime pointers where the sandbox reads them');
  // The reserved buffer: an ArrayBuffer of the guest's heap that no guest code can reach (only this handle holds it).
  const buffer = context.newArrayBuffer(new ArrayBuffer(BUFFER_BYTES));
  const slot = ffi.QTS_GetArrayBuffer(ctx, buffer.value as unknown as number);
  const undefinedValue = context.undefined.value as unknown as number;
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  // Views of the guest's memory, made again when it grows (growing detaches the old buffer).
  let bytes = new Uint8Array(memory.buffer);
  let words = new Int32Array(memory.buffer);
  // Growing detaches the old buffer, and a view of a detached buffer has length 0: a test cheaper than asking the
  // memory for its buffer, which every call into the guest does several times.
  const current = () => {
    if (bytes.length === 0) {
      bytes = new Uint8Array(memory.buffer);
      words = new Int32Array(memory.buffer);
    }
  };
  const chars = (pointer: number): string => {
    current();
    const text = decoder.decode(bytes.subarray(pointer, bytes.indexOf(0, pointer)));
    ffi.QTS_FreeCString(ctx, pointer);
    return text;
  };
  // The text as a guest string: its value pointer, and how to free it.
  const newString = (text: string): { value: number; free(): void } => {
    const { read, written } = encoder.encodeInto(text, bytes.subarray(slot + TEXT_AT, slot + BUFFER_BYTES - 1));
    if (read !== text.length) {
      const handle = context.newString(text);
      return { value: handle.value as unknown as number, free: () => handle.dispose() };
    }
    bytes[slot + TEXT_AT + written] = 0;
    const value = ffi.QTS_NewString(ctx, slot + TEXT_AT);
    return { value, free: () => ffi.QTS_FreeValuePointer(ctx, value) };
  };
  const tagOf = (value: number): number => {
    current();
    return words[(value >> 2) + 1]!;
  };
  // The value layout runJobs reads, checked on known values.
  const probes = [context.newNumber(1.5), context.newObject()];
  const layoutKnown =
    isNumberTag(tagOf(probes[0]!.value as unknown as number)) &&
    tagOf(probes[1]!.value as unknown as number) === TAG_OBJECT &&
    tagOf(undefinedValue) === TAG_UNDEFINED;
  for (const probe of probes) probe.dispose();
  if (!layoutKnown) throw new Error('quickjs-emscripten no longer lays values out as the sandbox reads them');
  return {
    runJobs() {
      if (!ffi.QTS_IsJobPending(rt)) return false;
      // The job's context is written where a call's argument pointer goes (no call is under way): the library
      // would allocate a pointer, wrap the result in handles and read its type as a string.
      current();
      words[slot >> 2] = 0;
      const value = ffi.QTS_ExecutePendingJob(rt, -1, slot);
      current();
      if (words[slot >> 2] === 0) {
        ffi.QTS_FreeValuePointerRuntime(rt, value);
        return false;
      }
      // The number of jobs run, or the exception that stopped them.
      if (!isNumberTag(tagOf(value))) return value;
      ffi.QTS_FreeValuePointer(ctx, value);
      return true;
    },
    call(fn, text) {
      current();
      const argument = text === undefined ? undefined : newString(text);
      // Read again: making the string may have grown the memory.
      current();
      if (argument) words[slot >> 2] = argument.value;
      const result = ffi.QTS_Call(ctx, fn.value as unknown as number, undefinedValue, argument ? 1 : 0, slot);
      argument?.free();
      const error = ffi.QTS_ResolveException(ctx, result);
      if (error) {
        ffi.QTS_FreeValuePointer(ctx, result);
        return { error };
      }
      const answer = chars(ffi.QTS_GetString(ctx, result));
      ffi.QTS_FreeValuePointer(ctx, result);
      return { text: answer };
    },
    errorText(pointer) {
      try {
        const dumped = JSON.parse(chars(ffi.QTS_Dump(ctx, pointer))) as unknown;
        if (typeof dumped !== 'object' || dumped === null) return String(dumped);
        const { name, message } = dumped as { name?: unknown; message?: unknown };
        return `${String(name)}: ${String(message)}`;
      } catch {
        return 'unknown error';
      } finally {
        ffi.QTS_FreeValuePointer(ctx, pointer);
      }
    },
    free(pointer) {
      ffi.QTS_FreeValuePointer(ctx, pointer);
    },
    dispose() {
      buffer.dispose();
    },
  };
}
