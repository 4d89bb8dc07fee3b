// The types of the QuickJS sandbox (./quickjs.ts): what a call takes and gives back, and the sandbox's options.
import type { Logger } from '../../log.js';
import type { ProtocolMetadata } from '../../protocol/document.js';
import type { JsonObject, JsonValue } from '../../schemas.js';

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
  /** CPU time per call, in ms (default min(timeoutMs, 250)): how long one call may compute on the event loop. */
  cpuLimitMs?: number;
  /** The whole WebAssembly memory of the routine, in MB (default 64, at least 24): every allocation counts. */
  memoryLimitMb?: number;
  /** CPU time allowed to load the module into a fresh context, in ms (default 1000; 5× that of wall-clock time). */
  loadTimeoutMs?: number;
  /** A name for the routine in errors. */
  name?: string;
  /** The CPU clock in ms (default: the process's CPU time, `process.cpuUsage()`); tests inject their own. */
  cpuClock?: () => number;
  /** Idle time after which the context is dropped, in ms (default 5 minutes); the next call builds a fresh one. */
  idleMs?: number;
  /** Log lines one call may write (default 50); past it, or past `maxLogBytes`, one line says the rest was cut. */
  maxLogLines?: number;
  /** Log bytes one call may write, lines of at most 2,000 characters included (default 16 KiB). */
  maxLogBytes?: number;
};

/** The methods a generated module answers. */
export type SandboxMethod = 'handle' | 'buildBody' | 'parseReply' | 'checkOutput';
