// Where a generated routine runs: a QuickJS interpreter compiled to WebAssembly (quickjs-emscripten), one instance per
// routine (built by ./_quickjs-instance.ts), with its own linear memory capped at the memory limit and an interrupt
// handler enforcing a CPU-time limit (./_cpu-slice.ts). The guest has the ECMAScript built-ins and nothing else: no
// `process`, no environment, no file system, no network, no timers, no module loader; its `eval`, `Function` and
// `import()` reach only QuickJS. The host hands it no function at all: the guest's tool requests, log lines and the end
// of a call come back as the return value of the host's own calls into it, one string each time (see
// ./_quickjs-guest.ts), so a call with one tool costs a handful of boundary crossings.
import type { QuickJSHandle } from 'quickjs-emscripten';
import { describeError } from '../../errors.js';
import type { SandboxContext, SandboxMethod, SandboxOptions, SandboxResult } from './quickjs-types.js';
import { beginSlice, chargedMs, processCpuClock } from './_cpu-slice.js';
import { TurnGate } from './_turn-gate.js';
import { answerTool } from './_quickjs-tools.js';
import { callText, logLineOf, safeJson, sandboxResult, toolRequestOf } from './_quickjs-guest.js';
import { writeLogLine, type CallLog, type LogBounds } from './_quickjs-log.js';
import { WarmInstance } from './_quickjs-warm.js';
import {
  breachError,
  guestErrorText,
  HIGH_WATER,
  instantiate,
  type Instance,
  type InstanceLimits,
} from './_quickjs-instance.js';

export type { SandboxContext, SandboxMethod, SandboxOptions, SandboxResult } from './quickjs-types.js';

type Call = {
  id: number;
  instance: Instance;
  context: SandboxContext | undefined;
  cpuLeft: number;
  /** `performance.now()` past which the call has run out of time, computing or waiting. */
  ends: number;
  resolve(result: SandboxResult): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout | undefined;
  /** Log lines and bytes written so far, made at the first line (most calls log nothing); `cut` once cut. */
  log: CallLog | undefined;
};

/**
 * A bundled generated module (see bundleForQuickJS) in its own QuickJS context: calls are queued one at a time,
 * each with a time, CPU and memory limit; a call that breaks a limit or throws fails, and the next call gets a fresh
 * context.
 */
export class QuickJSSandbox {
  readonly #code: string;
  readonly #timeoutMs: number;
  readonly #cpuLimitMs: number;
  readonly #memoryBytes: number;
  readonly #loadTimeoutMs: number;
  readonly #name: string;
  readonly #limits: InstanceLimits;
  readonly #warm: WarmInstance;
  #queue: Promise<unknown> = Promise.resolve();
  readonly #turns = new TurnGate();
  #current: Call | undefined;
  #ids = 0;
  readonly #logBounds: LogBounds;

  constructor(bundledCode: string, options: SandboxOptions = {}) {
    this.#code = bundledCode;
    this.#timeoutMs = options.timeoutMs ?? 2000;
    this.#cpuLimitMs = options.cpuLimitMs ?? Math.min(this.#timeoutMs, 250);
    this.#memoryBytes = Math.max(24, options.memoryLimitMb ?? 64) * 1024 * 1024;
    this.#loadTimeoutMs = options.loadTimeoutMs ?? 1000;
    this.#name = options.name ?? 'generated routine';
    this.#logBounds = {
      name: this.#name,
      maxLines: options.maxLogLines ?? 50,
      maxBytes: options.maxLogBytes ?? 16 * 1024,
    };
    this.#limits = {
      memoryBytes: this.#memoryBytes,
      loadTimeoutMs: this.#loadTimeoutMs,
      cpuLimitMs: this.#cpuLimitMs,
      name: this.#name,
      cpuClock: options.cpuClock ?? processCpuClock,
    };
    this.#warm = new WarmInstance(
      () => instantiate(this.#code, this.#limits, (loading, error) => this.#describeBreach(loading, error)),
      options.idleMs ?? 5 * 60_000,
      () => this.#current !== undefined,
    );
  }

  /** Calls `handle` (with a context), `buildBody`, `parseReply` or `checkOutput` (output schema → issues or null). */
  run(method: SandboxMethod, payload: unknown, context?: SandboxContext): Promise<SandboxResult> {
    // The calls asked for during one turn of the event loop start together once it has run (see ./_turn-gate.ts).
    const gate = this.#turns.next();
    const call = this.#queue.then(() => gate).then(() => this.#run(method, payload, context));
    this.#queue = call.then(
      () => undefined,
      () => undefined,
    );
    return call;
  }

  /** Drops the context; later calls fail. */
  async close(): Promise<void> {
    this.#warm.close();
    this.#fail(new Error('the routine was unloaded'));
    await this.#warm.dispose();
  }

  async #run(method: SandboxMethod, payload: unknown, context: SandboxContext | undefined): Promise<SandboxResult> {
    if (this.#warm.closed) throw new Error('the routine was unloaded');
    const instance = await this.#warm.ready();
    const id = ++this.#ids;
    const text = callText(instance, id, method, payload, context);
    return new Promise<SandboxResult>((resolve, reject) => {
      const call: Call = {
        id,
        instance,
        context,
        cpuLeft: this.#cpuLimitMs,
        ends: performance.now() + this.#timeoutMs,
        resolve,
        reject,
        timer: undefined,
        log: undefined,
      };
      this.#current = call;
      this.#enter(call, instance.run, text);
      // Most routines answer within that first slice; a timer only for those that wait on a tool.
      // (Set for what is left of the call's time: tools that answered at once may have used some.)
      if (this.#current === call)
        call.timer = setTimeout(() => this.#fail(this.#timedOut()), Math.max(0, call.ends - performance.now()));
    });
  }

  /**
   * Runs guest code for the current call, then settles in the answers of the tools it asked for that answer at once
   * (see toolFunction): a routine whose tools are synchronous runs to its end here, with no promise and no timer
   * between its steps. A tool that answers later settles in from its promise, through this again.
   */
  #enter(call: Call, fn: QuickJSHandle, argument: string): void {
    const instance = call.instance;
    const answers = [argument];
    for (let index = 0; index < answers.length; index++) {
      if (index > 0) {
        // Each answer goes to the call that asked, while it lasts; the call's time limit holds here too, as no timer
        // can fire while this loop runs.
        if (this.#current !== call || this.#warm.current !== instance) return;
        if (performance.now() >= call.ends) {
          this.#fail(this.#timedOut());
          return;
        }
      }
      for (const request of this.#slice(call, index === 0 ? fn : instance.settle, answers[index]!)) {
        const answer = this.#tool(instance, request);
        if (answer !== undefined) answers.push(answer);
      }
    }
  }

  /**
   * Runs guest code for the current call under its remaining CPU time, then its pending jobs, and acts on what the
   * guest said meanwhile (its outbox: the end of the call, tool requests, log lines); a breach fails the call.
   * Returns the tool requests, to run once the slice is over: a tool's own time is not the guest's.
   */
  #slice(call: Call, fn: QuickJSHandle, argument: string): string[] {
    const instance = call.instance;
    const outboxes: string[] = [];
    const toolRequests: string[] = [];
    // The call's time limit is the wall-clock backstop: no timer fires while guest code holds the thread.
    const slice = beginSlice(call.cpuLeft, call.ends - performance.now(), instance.meter);
    instance.slice = slice;
    let failure: Error | undefined;
    try {
      const first = instance.caller.call(fn, argument);
      if (first.text === undefined) failure = this.#thrown(instance, first.error);
      else {
        outboxes.push(first.text);
        const jobs = instance.caller.runJobs();
        if (typeof jobs === 'number') failure = this.#thrown(instance, jobs);
        else if (jobs) {
          const flushed = instance.caller.call(instance.flush);
          if (flushed.text === undefined) failure = this.#thrown(instance, flushed.error);
          else outboxes.push(flushed.text);
        }
      }
      // Acted on while the slice is still set: a call's end that reports the interruption is read as the breach.
      if (!failure) for (const outbox of outboxes) if (outbox) this.#deliver(instance, outbox, toolRequests);
    } catch (error) {
      // A WebAssembly trap or an "Aborted()" of the emscripten runtime: this instance is finished.
      failure = new Error(`the routine crashed the sandbox: ${describeError(error)}`);
    } finally {
      instance.slice = undefined;
      call.cpuLeft -= chargedMs(slice, instance.meter);
    }
    if (failure) {
      if (this.#current === call) this.#fail(failure);
      return [];
    }
    return toolRequests;
  }

  /**
   * Acts on a guest's outbox, "D…" (a call's end), "T…" (a tool request, kept in `toolRequests` for after the slice)
   * and "L…" (a log line).
   */
  #deliver(instance: Instance, outbox: string, toolRequests: string[]): void {
    // Its messages are separated by newlines (see GUEST_PRELUDE): every part of a message that could hold one is JSON
    // text, whose strings never hold a raw newline. Read in place: no array of them, no object each.
    for (let start = 0; start < outbox.length;) {
      let end = outbox.indexOf('\n', start);
      if (end === -1) end = outbox.length;
      const kind = outbox.charCodeAt(start);
      if (kind === 0x44 /* D */) this.#done(instance, outbox.slice(start + 1, end));
      else if (kind === 0x54 /* T */) toolRequests.push(outbox.slice(start + 1, end));
      else if (kind === 0x4c /* L */) this.#log(instance, outbox.slice(start + 1, end));
      start = end + 1;
    }
  }

  #describeBreach(instance: Instance, error: QuickJSHandle): Error {
    return this.#breach(instance, () => guestErrorText(instance, error));
  }

  /** #describeBreach for an error a prelude call threw (see ./_quickjs-call.ts), which it frees. */
  #thrown(instance: Instance, error: number): Error {
    return this.#breach(
      instance,
      () => instance.caller.errorText(error),
      () => instance.caller.free(error),
    );
  }

  // Checked before reading the error: its getters are guest code, interrupted like any other.
  #breach(instance: Instance, read: () => string, discard?: () => void): Error {
    if (!instance.slice?.breach) return breachError(instance, read(), this.#limits, false);
    discard?.();
    return breachError(instance, '', this.#limits, false);
  }

  /** The end of a call, as the guest reports it: "+<runId>:<result JSON>" or "-<runId>:<error>". */
  #done(instance: Instance, report: string): void {
    const mark = report.indexOf(':');
    const call = this.#callOf(instance, Number(report.slice(1, mark)));
    if (!call) return;
    const text = report.slice(mark + 1);
    if (report[0] !== '+') {
      const error = safeJson(text);
      this.#fail(breachError(instance, typeof error === 'string' ? error : text, this.#limits, true));
      return;
    }
    const result = sandboxResult(safeJson(text));
    if (typeof result === 'string') {
      this.#fail(new Error(`the routine's result is malformed: ${result}`));
      return;
    }
    this.#finish(call);
    // A context that grew close to its limit starts the next call fresh rather than fail it.
    if (instance.memory.buffer.byteLength > this.#memoryBytes * HIGH_WATER) this.#warm.drop(instance);
    call.resolve(result);
  }

  #timedOut(): Error {
    return new Error(`timed out after ${this.#timeoutMs} ms`);
  }

  /** Fails the current call and drops its context: whatever the guest did, the next call starts from scratch. */
  #fail(error: Error): void {
    const call = this.#current;
    if (!call) return;
    this.#finish(call);
    this.#warm.drop(call.instance);
    call.reject(new Error(`${this.#name}: ${error.message}`));
  }

  #finish(call: Call): void {
    this.#current = undefined;
    clearTimeout(call.timer);
    this.#warm.used();
  }

  /** The call a report from the guest belongs to, if it is the current one. */
  #callOf(instance: Instance, runId: unknown): Call | undefined {
    const call = this.#current;
    return call && call.instance === instance && call.id === runId ? call : undefined;
  }

  /**
   * A tool call from the guest (see toolRequestOf), run by answerTool: the text to settle in now, or undefined when
   * the tool answers later (settled in then, if the call is still the current one).
   */
  #tool(instance: Instance, text: string): string | undefined {
    const request = toolRequestOf(text);
    const call = request && this.#callOf(instance, request.runId);
    if (!request || !call) return undefined;
    return answerTool(
      call.context?.tools ?? {},
      instance.toolNames[request.index],
      request.callId,
      request.input,
      (answer) => {
        // A late answer, after the call failed or timed out, has nobody to go to.
        if (this.#current === call && this.#warm.current === instance) this.#enter(call, instance.settle, answer);
      },
    );
  }

  /** A log line from the guest (see logLineOf). */
  #log(instance: Instance, text: string): void {
    const line = logLineOf(text);
    const call = line && this.#callOf(instance, line.runId);
    if (!line || !call?.context) return;
    call.log ??= { lines: 0, bytes: 0, cut: false };
    writeLogLine(call.log, call.context.logger, line.level, line.message, this.#logBounds);
  }
}
