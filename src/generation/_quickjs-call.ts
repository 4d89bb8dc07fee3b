// How the sandbox (./quickjs.ts) calls the prelude's run, settle and flush (./_quickjs-guest.ts): through
// quickjs-emscripten's FFI rather than its handle API. newString and callFunction allocated the text and an argument
// array in the guest's memory, wrapped the result in a handle and a result object, and freed it all again: ~2 µs of
// host time a call, three calls per query with a tool (measured: callFunction+dispose 1.1-1.5 µs, QTS_Call+free
// 0.1-0.3 µs; newString+dispose 1.2 µs, written here 0.5 µs). Here the text and the argument pointer are written
// into one buffer reserved at load, and the result, always a string, is read and freed at once.
//
// The FFI is the library's own (QuickJSWASMModule#getFFI). The one thing read past its public types is the
// context's JSContext pointer (its `ctx` field, protected in the types): checked when the instance is built, so a
// library that moved it fails every load loudly rather than any call quietly.
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
};

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
  /** The guest error at `pointer` as one line ("TypeError: …"), then frees it; call it under a CPU slice (its getters are guest code). */
  errorText(pointer: number): string;
  /** Frees an error unread. */
  free(pointer: number): void;
  /** Frees the reserved buffer. */
  dispose(): void;
};

/** A caller for `context`, whose guest memory is `memory`. */
export function guestCaller(wasm: QuickJSWASMModule, context: QuickJSContext, memory: { readonly buffer: ArrayBuffer }): GuestCaller {
  const ffi = wasm.getFFI() as unknown as Ffi;
  const ctx = (context as unknown as { ctx?: { value?: unknown } }).ctx?.value;
  if (typeof ctx !== 'number' || ctx === 0) throw new Error('quickjs-emscripten no longer has the context pointer where the sandbox reads it');
  // The reserved buffer: an ArrayBuffer of the guest's heap that no guest code can reach (only this handle holds it).
  const buffer = context.newArrayBuffer(new ArrayBuffer(BUFFER_BYTES));
  const slot = ffi.QTS_GetArrayBuffer(ctx, buffer.value as unknown as number);
  const undefinedValue = context.undefined.value as unknown as number;
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  // Views of the guest's memory, made again when it grows (growing detaches the old buffer).
  let bytes = new Uint8Array(memory.buffer);
  let words = new Int32Array(memory.buffer);
  const current = () => {
    if (bytes.buffer !== memory.buffer) {
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
  return {
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
