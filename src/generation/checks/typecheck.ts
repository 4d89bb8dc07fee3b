// Type-check: the TypeScript compiler API in a worker thread, so a 1-3 s check never stalls the agent's event loop.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describeError } from '../../errors.js';
import { frameworkRoot, workerModule } from './_worker.js';

const require = createRequire(import.meta.url);

// Importable from here as before the contract moved to src/routine/contract.ts.
/**
 * What `agora-agents` looks like to a generated module at type-check time: src/routine/contract.ts, the routine
 * contract stated once, read as it ships (src/ is in the package) and wrapped as the module's declaration. Loading
 * src/index.ts instead would pull in the Anthropic SDK's types and triple the check time.
 */
export const ROUTINE_DECLARATION = `declare module 'agora-agents' {
${readFileSync(join(frameworkRoot(), 'src', 'routine', 'contract.ts'), 'utf8')}
  export const defineRoutine: DefineRoutine;
}
`;

/**
 * What `agora-agents` looks like to a hand-written routine or tool: the routine and tool contracts (src/routine/ and
 * src/tool/contract.ts, read as they ship) and zod. A name imported beyond these is left unchecked (typed `any`):
 * the whole entry's types would take ~20 s and 1,000 files per check here, against ~1 s for these.
 */
const AUTHORED_DECLARATION = `declare module 'agora-agents' {
${readFileSync(join(frameworkRoot(), 'src', 'routine', 'contract.ts'), 'utf8')}
${readFileSync(join(frameworkRoot(), 'src', 'tool', 'contract.ts'), 'utf8').replace(/^import .*$/gm, '')}
  export const defineRoutine: DefineRoutine;
  export const defineTool: DefineTool;
  export { z } from 'zod';
}
`;

// The few globals a routine may use: no DOM, no @types/node (which would also slow every check down).
const GLOBALS_DECLARATION = `interface AbortSignal { readonly aborted: boolean; readonly reason: any; throwIfAborted(): void }
declare var console: { log(...data: any[]): void; info(...data: any[]): void; warn(...data: any[]): void; error(...data: any[]): void; debug(...data: any[]): void };
declare function structuredClone<T>(value: T): T;
`;

const CHECK_MODULES: Record<'routine' | 'task', string> = {
  routine: `import routine from './routine';\nimport type { Routine } from 'agora-agents';\nconst checked: Routine = routine;\nvoid checked;\n`,
  task: `import routine from './routine';\nimport type { TaskRoutine } from 'agora-agents';\nconst checked: TaskRoutine = routine;\nvoid checked;\n`,
};

// A routine in the shape the LLM writes, so warming exercises the same compiler paths as the real checks.
const WARM_ROUTINE = `import { defineRoutine } from 'agora-agents';
import { z } from 'zod';
export default defineRoutine({
  input: z.object({ value: z.number(), unit: z.string().optional() }),
  output: z.union([z.object({ result: z.number() }), z.object({ error: z.string() })]),
  async handle(body, context) {
    const data = z.object({ result: z.number() }).parse(await context.tools.warm({ value: body.value }));
    context.conversation.state.last = data.result;
    return { result: data.result };
  },
});
`;

/** The outcome of a type-check: compiler errors, one line each (`routine.ts(3,5): error TS2322: …`), and the time. */
export type TypeCheckResult = { errors: string[]; ms: number };

/**
 * Type-checks generated modules with the TypeScript compiler API in a worker thread that keeps the parsed lib and
 * zod declarations between checks (first check ~2-3 s, later ones ~1 s) and stops after a minute idle.
 */
export class RoutineTypeChecker {
  #worker: Worker | undefined;
  readonly #pending = new Map<
    number,
    { resolve(result: TypeCheckResult): void; reject(error: Error): void; timer: NodeJS.Timeout }
  >();
  #ids = 0;
  #closed = false;
  #idleTimer: NodeJS.Timeout | undefined;
  readonly #idleMs: number;
  readonly #timeoutMs: number;

  constructor(options: { idleMs?: number; timeoutMs?: number } = {}) {
    this.#idleMs = options.idleMs ?? 60_000;
    this.#timeoutMs = options.timeoutMs ?? 60_000;
  }

  /** Type-checks a routine module (`kind: 'routine'`) or a task module (`'task'`) in strict mode. */
  check(code: string, kind: 'routine' | 'task'): Promise<TypeCheckResult> {
    return this.#send(
      {
        'routine.ts': code,
        'check.ts': CHECK_MODULES[kind],
        'agora-agents.d.ts': ROUTINE_DECLARATION,
        'globals.d.ts': GLOBALS_DECLARATION,
      },
      ['routine.ts', 'check.ts'],
    ).then((result) => ({
      ...result,
      errors: result.errors.map((error) =>
        error.startsWith('check.ts')
          ? `the default export is not ${kind === 'routine' ? 'defineRoutine({ input, output, handle })' : '{ buildBody, parseReply }'}: ${error.replace(/^check\.ts\(\d+,\d+\): /, '')}`
          : error,
      ),
    }));
  }

  /**
   * Type-checks hand-written files on disk (`routines/*.ts`, `tools/*.ts`) in strict mode, with Node's types when
   * `@types/node` is installed; errors name the file by its path under `root`.
   */
  checkFiles(files: readonly string[], root: string): Promise<TypeCheckResult> {
    return this.#send({ 'agora-agents.d.ts': AUTHORED_DECLARATION }, [], { files: [...files], root });
  }

  /**
   * Loads the compiler and checks a typical routine ahead of the first real check, while the LLM writes the code:
   * parsing the lib and zod declarations is most of a cold check, and a real LLM takes longer than that to reply.
   */
  warm(): void {
    this.check(WARM_ROUTINE, 'routine').catch(() => undefined);
  }

  /** Stops the worker; a check asked for afterwards fails at once (it would start a worker that keeps the process up). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#idleTimer);
    const worker = this.#worker;
    this.#worker = undefined;
    this.#failAll(new Error('the type checker was closed'));
    await worker?.terminate();
  }

  #send(
    files: Record<string, string>,
    report: string[],
    disk?: { files: string[]; root: string },
  ): Promise<TypeCheckResult> {
    if (this.#closed) return Promise.reject(new Error('the type checker was closed'));
    clearTimeout(this.#idleTimer);
    const worker = this.#spawn();
    worker.ref();
    const id = ++this.#ids;
    return new Promise<TypeCheckResult>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#failAll(new Error(`the type-check took longer than ${this.#timeoutMs} ms`));
        void this.#worker?.terminate();
        this.#worker = undefined;
      }, this.#timeoutMs);
      this.#pending.set(id, { resolve, reject, timer });
      worker.postMessage({ id, files, report, disk });
    });
  }

  #spawn(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(workerModule('_typecheck-worker'), {
      workerData: { typescript: pathToFileURL(require.resolve('typescript')).href, root: frameworkRoot() },
      execArgv: [],
      env: {},
    });
    worker.on('message', (message: { id: number; errors: string[]; ms: number }) => {
      const pending = this.#pending.get(message.id);
      if (!pending) return;
      this.#pending.delete(message.id);
      clearTimeout(pending.timer);
      pending.resolve({ errors: message.errors, ms: Math.round(message.ms) });
      this.#settle();
    });
    worker.on('error', (error) => {
      if (this.#worker === worker) this.#worker = undefined;
      this.#failAll(new Error(`the type checker crashed: ${describeError(error)}`));
    });
    worker.on('exit', () => {
      if (this.#worker === worker) this.#worker = undefined;
      this.#failAll(new Error('the type checker stopped'));
    });
    this.#worker = worker;
    return worker;
  }

  #settle(): void {
    if (this.#pending.size) return;
    // Idle: let the process exit, and free the compiler's memory after a while.
    this.#worker?.unref();
    clearTimeout(this.#idleTimer);
    this.#idleTimer = setTimeout(() => void this.close(), this.#idleMs);
    this.#idleTimer.unref();
  }

  #failAll(error: Error): void {
    for (const [id, pending] of this.#pending) {
      this.#pending.delete(id);
      clearTimeout(pending.timer);
      pending.reject(error);
    }
  }
}
