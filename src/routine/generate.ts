// Routines written by the LLM (spec §6): after enough LLM-served uses of a protocol, the LLM writes a TypeScript
// module; it is built, type-checked and run against recorded and fresh examples before anyone may approve it, and
// it runs in a worker thread with a time and memory limit. Receiver side: `RoutineGenerator`. Sender side:
// `generateTaskRoutine` and `TaskRoutineStore`. Review side (the CLI): `listGeneratedRoutines`,
// `findGeneratedRoutine`, `reviewGeneratedRoutine`.
//
// The boundary, honestly: a worker thread is not a security sandbox. It shares the process, so a determined module
// can still reach Node's internals in ways we do not foresee. What the worker gives is robustness against an LLM's
// mistakes: a runaway loop is terminated, a memory hog hits its heap limit, environment variables are absent,
// `fetch` and friends are gone, and the build refuses every import but zod and agora-agents. Human approval is the
// real gate, and it is off only when the owner asks for `autoApprove`.
import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { z, type ZodType } from 'zod';
import { AgoraError, describeError } from '../errors.js';
import { answerUnderProtocol, extractJson, prescribesJson, type AgentProfile } from '../llm/responders.js';
import { converse, type LanguageModel, type LlmMessage, type LlmUsage } from '../llm/toolformer.js';
import { silentLogger, type Logger } from '../log.js';
import { writeFileAtomic, type AgentMemory } from '../memory.js';
import { normalizeHash, type ProtocolDocument, type ProtocolMetadata } from '../protocol/document.js';
// Types only: the receiver imports nothing from here, it receives these functions through its extensions.
import type { ReceiverExtensions, RoutineRunner, ServedEvent } from '../receiver.js';
import type { JsonObject, JsonValue } from '../schemas.js';
import { callTool, toolInputJsonSchema, type Tool } from '../tool/define.js';
import { describeLoadError } from './load.js';
import { protocolInvalidInputReply } from './run.js';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

/** Where a generated routine stands: written and checked (`pending`), usable (`approved`), or not. */
export type RoutineStatusName = 'generating' | 'pending' | 'approved' | 'rejected' | 'disabled' | 'failed';

/** What memory keeps about one generated routine (`routines/<hash>/status`, `task-routines/<task>/<hash>/status`). */
export type RoutineStatus = {
  status: RoutineStatusName;
  kind: 'protocol' | 'task';
  /** The protocol document's name. */
  protocol: string;
  hash: string;
  /** The task's name (task routines only). */
  task?: string;
  /** The module, relative to the agent folder. */
  file?: string;
  /** The checks it passed. */
  checks?: string[];
  attempts?: number;
  /** The last errors, when generation gave up. */
  errors?: string[];
  /** Why it was disabled. */
  reason?: string;
  model?: string;
  typeCheckMs?: number;
  createdAt: string;
  updatedAt: string;
  reviewedAt?: string;
};

/** Uses of a protocol (or task) counted per first turn, and the generated routine's failures. */
export type RoutineCounters = { uses: number; llm: number; routine: number; failures: number };

const COUNTER_FIELDS = ['uses', 'llm', 'routine', 'failures'] as const;
type CounterField = (typeof COUNTER_FIELDS)[number];

/** The build error every import but zod and agora-agents gets. */
export const IMPORT_POLICY_ERROR = 'generated routines may only import zod and agora-agents';

// ---------------------------------------------------------------------------------------------------------------
// Naming

/** A file-name slug of a protocol or task name: lowercase ASCII words joined by `-`. */
export function routineSlug(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return slug || 'protocol';
}

function protocolStem(document: ProtocolDocument): string {
  return `${routineSlug(document.metadata.name)}-${document.hash.slice(0, 8)}`;
}

function taskStem(task: string, hash: string): string {
  return `task-${routineSlug(task)}-${hash.slice(0, 8)}`;
}

/** The folder that holds the framework's node_modules (zod resolves from there for builds and type-checks). */
function frameworkRoot(): string {
  return resolve(here, '../..');
}

// ---------------------------------------------------------------------------------------------------------------
// Build: esbuild bundles the module with zod, `agora-agents` becomes a shim, every other import is refused.

const GENERATED_SOURCE = '__agora_generated_module__.ts';

// The whole of `agora-agents` a generated module gets at run time: the same checks as src/routine/define.ts.
const AGORA_SHIM = `export function defineRoutine(definition) {
  if (!definition || typeof definition.handle !== 'function') throw new Error('defineRoutine needs a handle function');
  return Object.freeze({ ...definition, kind: 'routine' });
}
`;

/**
 * Bundles a generated module into one ESM string (zod included, `agora-agents` a shim providing defineRoutine).
 * Throws "generated routines may only import zod and agora-agents" for any other import, relative ones included.
 */
export async function bundleGeneratedModule(code: string): Promise<string> {
  // esbuild leaves a computed import() alone, and it could reach node: modules at run time: refuse it here.
  if (/\bimport\s*\(|\brequire\s*\(/.test(code)) throw new Error(`${IMPORT_POLICY_ERROR}: no import() and no require()`);
  const esbuild = await import('esbuild');
  const root = frameworkRoot();
  const entry = join(root, GENERATED_SOURCE);
  try {
    const result = await esbuild.build({
      stdin: { contents: code, loader: 'ts', resolveDir: root, sourcefile: GENERATED_SOURCE },
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'neutral',
      mainFields: ['module', 'main'],
      target: 'node20',
      legalComments: 'none',
      logLevel: 'silent',
      plugins: [
        {
          name: 'agora-generated-imports',
          setup(build) {
            build.onResolve({ filter: /.*/ }, (args) => {
              // zod's own files import each other: only the generated module is held to the policy.
              if (args.kind === 'entry-point' || args.importer !== entry) return undefined;
              if (args.path === 'agora-agents') return { path: 'agora-agents', namespace: 'agora-shim' };
              if (args.path === 'zod' || args.path.startsWith('zod/')) return undefined;
              return { errors: [{ text: `${IMPORT_POLICY_ERROR}, not "${args.path}"` }] };
            });
            build.onLoad({ filter: /.*/, namespace: 'agora-shim' }, () => ({ contents: AGORA_SHIM, loader: 'js' }));
          },
        },
      ],
    });
    const output = result.outputFiles[0];
    if (!output) throw new Error('esbuild produced nothing');
    return output.text;
  } catch (error) {
    throw new Error(describeLoadError(error), { cause: error });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Type-check: the TypeScript compiler API in a worker thread, so a 1-3 s check never stalls the agent's event loop.

/**
 * What `agora-agents` looks like to a generated module at type-check time: the routine contract of
 * src/routine/define.ts, restated without the framework's other types (loading src/index.ts would pull in
 * the Anthropic SDK's types and triple the check time). The tests check both directions of assignability
 * against define.ts, so a change there that is not made here fails them.
 */
export const ROUTINE_DECLARATION = `declare module 'agora-agents' {
  import type { z } from 'zod';
  export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
  export type JsonObject = { [key: string]: JsonValue };
  export type Logger = { info(message: string): void; warn(message: string): void; error(message: string): void; debug?(message: string): void };
  export type ProtocolMetadata = { name: string; description: string; multiround: boolean; [key: string]: unknown };
  export type RoutineContext = {
    conversation: { id: string | null; turn: number; state: JsonObject };
    protocol: { name: string; hash: string; metadata: ProtocolMetadata };
    logger: Logger;
    tools: Record<string, (input: unknown) => Promise<unknown>>;
    signal: AbortSignal;
  };
  export type RoutineDefinition<Input = unknown, Output = unknown> = {
    input?: z.ZodType<Input>;
    output?: z.ZodType<Output>;
    invalidInput?: unknown;
    handle(body: Input, context: RoutineContext): Output | Promise<Output>;
  };
  export type Routine = RoutineDefinition<any, any> & { readonly kind: 'routine' };
  export function defineRoutine<InputSchema extends z.ZodType = z.ZodType<any>, OutputSchema extends z.ZodType = z.ZodType<any>>(definition: {
    input?: InputSchema;
    output?: OutputSchema;
    invalidInput?: unknown;
    handle(body: z.output<InputSchema>, context: RoutineContext): z.input<OutputSchema> | Promise<z.input<OutputSchema>>;
  }): Routine;
  export type TaskRoutine = { buildBody(input: any): unknown; parseReply(body: any): unknown };
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

// Plain JavaScript, run as a data: URL module: a .ts file could not start a worker when running from source.
const TYPECHECK_WORKER = `
import { parentPort, workerData } from 'node:worker_threads';
const ts = (await import(workerData.typescript)).default;
const dir = workerData.root.replace(/\\\\/g, '/') + '/.agora-typecheck';
const options = {
  target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler,
  lib: ['lib.es2022.d.ts'], types: [], strict: true, noEmit: true, skipLibCheck: true, isolatedModules: true,
  allowImportingTsExtensions: true, noFallthroughCasesInSwitch: true,
};
const base = ts.createCompilerHost(options, true);
// Parsed library and zod declarations are kept: only the virtual files change from one check to the next.
const cache = new Map();
let virtual = new Map();
const host = {
  ...base,
  getCurrentDirectory: () => workerData.root,
  fileExists: (name) => virtual.has(name) || base.fileExists(name),
  readFile: (name) => virtual.get(name) ?? base.readFile(name),
  directoryExists: (name) => name === dir || (base.directoryExists ? base.directoryExists(name) : true),
  writeFile: () => {},
  getSourceFile(name, language, onError, shouldCreate) {
    const text = virtual.get(name);
    if (text !== undefined) return ts.createSourceFile(name, text, language, true);
    let file = cache.get(name);
    if (!file) {
      file = base.getSourceFile(name, language, onError, shouldCreate);
      if (file) cache.set(name, file);
    }
    return file;
  },
};
function format(diagnostic) {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
  if (!diagnostic.file || diagnostic.start === undefined) return 'error TS' + diagnostic.code + ': ' + message;
  const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
  const name = diagnostic.file.fileName.slice(diagnostic.file.fileName.lastIndexOf('/') + 1);
  return name + '(' + (line + 1) + ',' + (character + 1) + '): error TS' + diagnostic.code + ': ' + message;
}
parentPort.on('message', ({ id, files, report }) => {
  const started = performance.now();
  try {
    virtual = new Map(Object.entries(files).map(([name, text]) => [dir + '/' + name, text]));
    const program = ts.createProgram([...virtual.keys()], options, host);
    const diagnostics = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()];
    for (const name of report) {
      const file = program.getSourceFile(dir + '/' + name);
      if (file) diagnostics.push(...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file));
    }
    parentPort.postMessage({ id, errors: diagnostics.slice(0, 20).map(format), ms: performance.now() - started });
  } catch (error) {
    parentPort.postMessage({ id, errors: ['the type-check crashed: ' + (error && error.message)], ms: performance.now() - started });
  }
});
`;

function dataUrl(source: string): URL {
  return new URL(`data:text/javascript;base64,${Buffer.from(source, 'utf8').toString('base64')}`);
}

/** The outcome of a type-check: compiler errors, one line each (`routine.ts(3,5): error TS2322: …`), and the time. */
export type TypeCheckResult = { errors: string[]; ms: number };

/**
 * Type-checks generated modules with the TypeScript compiler API in a worker thread that keeps the parsed lib and
 * zod declarations between checks (first check ~2-3 s, later ones ~1 s) and stops after a minute idle.
 */
export class RoutineTypeChecker {
  #worker: Worker | undefined;
  readonly #pending = new Map<number, { resolve(result: TypeCheckResult): void; reject(error: Error): void; timer: NodeJS.Timeout }>();
  #ids = 0;
  #idleTimer: NodeJS.Timeout | undefined;
  readonly #idleMs: number;
  readonly #timeoutMs: number;

  constructor(options: { idleMs?: number; timeoutMs?: number } = {}) {
    this.#idleMs = options.idleMs ?? 60_000;
    this.#timeoutMs = options.timeoutMs ?? 60_000;
  }

  /** Type-checks a routine module (`kind: 'routine'`) or a task module (`'task'`) in strict mode. */
  check(code: string, kind: 'routine' | 'task'): Promise<TypeCheckResult> {
    return this.#send({ 'routine.ts': code, 'check.ts': CHECK_MODULES[kind], 'agora-agents.d.ts': ROUTINE_DECLARATION, 'globals.d.ts': GLOBALS_DECLARATION }, ['routine.ts', 'check.ts']).then(
      (result) => ({ ...result, errors: result.errors.map((error) => (error.startsWith('check.ts') ? `the default export is not ${kind === 'routine' ? 'defineRoutine({ input, output, handle })' : '{ buildBody, parseReply }'}: ${error.replace(/^check\.ts\(\d+,\d+\): /, '')}` : error)) }),
    );
  }

  /**
   * Loads the compiler and checks a typical routine ahead of the first real check, while the LLM writes the code:
   * parsing the lib and zod declarations is most of a cold check, and a real LLM takes longer than that to reply.
   */
  warm(): void {
    this.check(WARM_ROUTINE, 'routine').catch(() => undefined);
  }

  /** Stops the worker. */
  async close(): Promise<void> {
    clearTimeout(this.#idleTimer);
    const worker = this.#worker;
    this.#worker = undefined;
    this.#failAll(new Error('the type checker was closed'));
    await worker?.terminate();
  }

  #send(files: Record<string, string>, report: string[]): Promise<TypeCheckResult> {
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
      worker.postMessage({ id, files, report });
    });
  }

  #spawn(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(dataUrl(TYPECHECK_WORKER), {
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

// ---------------------------------------------------------------------------------------------------------------
// The worker a generated module runs in.

// Plain JavaScript, run as a data: URL module. It hardens the globals, then imports the bundled module (another
// data: URL), and answers runs; tools are called by message to the main thread.
const SANDBOX_WORKER = `
import { parentPort } from 'node:worker_threads';
const port = parentPort;
const post = (message) => port.postMessage(message);
const toBase64 = (text) => Buffer.from(text, 'utf8').toString('base64');
const calls = new Map();
let nextCall = 0;
let routine;

function describe(error) {
  if (error && typeof error === 'object' && typeof error.message === 'string') return (error.name && error.name !== 'Error' ? error.name + ': ' : '') + error.message;
  return String(error);
}
function issues(error) {
  const list = error && Array.isArray(error.issues) ? error.issues : [];
  return list.slice(0, 5).map((issue) => (issue.path && issue.path.length ? issue.path.join('.') + ': ' : '') + issue.message).join('; ') || describe(error);
}
function toJson(value, what) {
  if (value === undefined) return null;
  const text = JSON.stringify(value);
  if (text === undefined) throw new Error(what + ' is not JSON');
  return JSON.parse(text);
}
function harden() {
  for (const key of Object.keys(process.env)) delete process.env[key];
  for (const name of ['fetch', 'WebSocket', 'XMLHttpRequest', 'EventSource', 'BroadcastChannel', 'Worker']) {
    try { delete globalThis[name]; } catch {}
    try { if (name in globalThis) globalThis[name] = undefined; } catch {}
  }
  for (const name of ['binding', '_linkedBinding', 'dlopen', 'getBuiltinModule', 'kill', 'chdir', 'setuid', 'setgid', 'seteuid', 'setegid', 'setgroups', 'initgroups']) {
    const blocked = () => { throw new Error('process.' + name + ' is not available to generated routines'); };
    try { Object.defineProperty(process, name, { value: blocked, writable: false, configurable: false }); } catch {}
  }
}
function callTool(runId, name, input) {
  return new Promise((resolve, reject) => {
    const callId = ++nextCall;
    calls.set(callId, { resolve, reject });
    try {
      post({ type: 'tool', runId, callId, name, input: toJson(input, 'the input of tool ' + name) });
    } catch (error) {
      calls.delete(callId);
      reject(error);
    }
  });
}
async function handle(id, body, context) {
  const definition = typeof routine === 'function' ? { handle: routine } : routine;
  if (!definition || typeof definition.handle !== 'function') throw new Error('the default export must be defineRoutine({ handle })');
  const log = (level) => (message) => post({ type: 'log', runId: id, level, message: String(message) });
  const conversation = { id: context.conversation.id, turn: context.conversation.turn, state: context.conversation.state };
  const tools = Object.freeze(Object.fromEntries(context.tools.map((name) => [name, (input) => callTool(id, name, input)])));
  const logger = Object.freeze({ info: log('info'), warn: log('warn'), error: log('error'), debug: log('info') });
  let input = body;
  if (definition.input) {
    const parsed = definition.input.safeParse(body);
    if (!parsed.success) {
      return { value: null, invalid: { issues: issues(parsed.error), ...(definition.invalidInput !== undefined ? { reply: toJson(definition.invalidInput, 'invalidInput') } : {}) } };
    }
    input = parsed.data;
  }
  let output = await definition.handle(input, { conversation, protocol: context.protocol, logger, tools, signal: new AbortController().signal });
  if (definition.output) {
    const parsed = definition.output.safeParse(output);
    if (!parsed.success) throw new Error("the reply does not match the routine's output schema: " + issues(parsed.error));
    output = parsed.data;
  }
  return { value: toJson(output, 'the reply'), state: toJson(conversation.state, 'the conversation state') };
}
async function run(message) {
  if (!routine) throw new Error('no module is loaded');
  const { id, method, payload } = message;
  if (method === 'handle') return handle(id, payload, message.context);
  if (method === 'checkOutput') {
    if (!routine.output) return { value: null };
    const parsed = routine.output.safeParse(payload);
    return { value: parsed.success ? null : issues(parsed.error) };
  }
  if (method === 'buildBody' || method === 'parseReply') {
    if (typeof routine[method] !== 'function') throw new Error('the default export has no ' + method + ' function');
    return { value: toJson(await routine[method](payload), 'the result of ' + method) };
  }
  throw new Error('unknown method ' + method);
}
port.on('message', (message) => {
  if (message.type === 'tool-result') {
    const call = calls.get(message.callId);
    if (!call) return;
    calls.delete(message.callId);
    if (message.ok) call.resolve(message.value);
    else call.reject(new Error(message.error));
  } else if (message.type === 'load') {
    harden();
    import('data:text/javascript;base64,' + toBase64(message.code)).then(
      (module) => {
        routine = module.default;
        if (routine === undefined || routine === null) post({ type: 'load-failed', error: 'the module has no default export' });
        else post({ type: 'loaded' });
      },
      (error) => post({ type: 'load-failed', error: describe(error) }),
    );
  } else if (message.type === 'run') {
    run(message).then(
      (result) => post({ type: 'result', id: message.id, ok: true, ...result }),
      (error) => post({ type: 'result', id: message.id, ok: false, error: describe(error) }),
    );
  }
});
`;

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
      const worker = new Worker(dataUrl(SANDBOX_WORKER), {
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

// ---------------------------------------------------------------------------------------------------------------
// Writing a module with the LLM: ask, build, type-check, check, feed the errors back.

/** A usage sink that also learns which protocol (by name) the LLM call was for. */
export type GenerationUsageSink = (usage: LlmUsage & { model: string }, label: string) => void;

/** The outcome of writing a checked module. */
export type WrittenModule =
  | { ok: true; code: string; checks: string[]; attempts: number; model: string; typeCheckMs: number }
  | { ok: false; errors: string[]; attempts: number; model: string };

type ModuleChecks = (module: SandboxedModule) => Promise<{ errors: string[]; passed: string[] }>;

type WriteOptions = {
  llm: LanguageModel;
  system: string;
  prompt: string;
  kind: 'routine' | 'task';
  maxAttempts: number;
  typeChecker: RoutineTypeChecker;
  sandbox: SandboxOptions;
  check: ModuleChecks;
  label: string;
  /** The protocol's name, for usage metrics. */
  usageLabel: string;
  logger: Logger;
  onUsage?: GenerationUsageSink;
};

const FENCE = '```';

/** The code of an LLM reply: its first TypeScript fenced block, or the whole reply when it is bare code. */
export function extractCode(text: string): string | undefined {
  const blocks = [...text.matchAll(/```[ \t]*([A-Za-z]*)[^\n]*\n([\s\S]*?)```/g)];
  const typed = blocks.find((block) => /^(ts|typescript|tsx|js|javascript|mjs)$/i.test(block[1] ?? '')) ?? blocks[0];
  if (typed?.[2]?.trim()) return `${typed[2].trim()}\n`;
  if (/\bexport\s+default\b/.test(text)) return `${text.trim()}\n`;
  return undefined;
}

async function writeCheckedModule(options: WriteOptions): Promise<WrittenModule> {
  let messages: LlmMessage[] = [{ role: 'user', content: options.prompt }];
  let errors: string[] = [];
  const model = options.llm.model;
  options.typeChecker.warm();
  for (let attempt = 1; attempt <= options.maxAttempts; attempt++) {
    const result = await converse(options.llm, {
      system: options.system,
      messages,
      maxSteps: 1,
      temperature: 0,
      maxTokens: 8192,
      ...(options.onUsage ? { onUsage: (usage: LlmUsage & { model: string }) => options.onUsage?.(usage, options.usageLabel) } : {}),
    });
    messages = result.messages;
    const code = extractCode(result.text);
    let typeCheckMs = 0;
    if (code === undefined) {
      errors = [`the reply holds no ${FENCE}ts code block`];
    } else {
      const [built, typed] = await Promise.all([
        bundleGeneratedModule(code).then(
          (bundle) => ({ bundle, error: undefined }),
          (error: unknown) => ({ bundle: undefined, error: error instanceof Error ? error.message : String(error) }),
        ),
        options.typeChecker.check(code, options.kind).catch((error: unknown) => ({ errors: [describeError(error)], ms: 0 })),
      ]);
      typeCheckMs = typed.ms;
      errors = [...(built.error ? [`build: ${built.error}`] : []), ...typed.errors.map((error) => `type-check: ${error}`)];
      if (!errors.length && built.bundle) {
        const module = new SandboxedModule(built.bundle, { ...options.sandbox, name: `agora check ${options.label}` });
        try {
          const checked = await options.check(module);
          errors = checked.errors;
          if (!errors.length) return { ok: true, code, checks: [`type-check (${typeCheckMs} ms)`, ...checked.passed], attempts: attempt, model, typeCheckMs };
        } finally {
          await module.close();
        }
      }
    }
    options.logger.info(`${options.label}: routine attempt ${attempt}/${options.maxAttempts} failed: ${errors[0] ?? 'unknown error'}${errors.length > 1 ? ` (+${errors.length - 1} more)` : ''}`);
    if (attempt < options.maxAttempts) {
      messages = [
        ...messages,
        {
          role: 'user',
          content: [`Your module failed these checks:`, ...errors.slice(0, 20).map((error) => `- ${error}`), '', `Fix every problem and reply with the whole corrected module in one ${FENCE}ts code block.`].join('\n'),
        },
      ];
    }
  }
  return { ok: false, errors, attempts: options.maxAttempts, model };
}

function fileHeader(options: { stem: string; what: string; hash: string; model: string; checks: string[]; date: string }): string {
  const clean = (text: string) => text.replace(/\s+/g, ' ').trim();
  return [
    `// Generated by agora-agents: written by an LLM, checked before use. Review it, then run`,
    `// \`agora routines approve ${options.stem}\` (or \`reject\`). Edits are kept; the checks are not re-run.`,
    `// ${clean(options.what)} (sha1 ${options.hash})`,
    `// Generated ${options.date} by ${clean(options.model)}`,
    `// Checks passed: ${clean(options.checks.join('; '))}`,
    '',
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------------------------
// Comparing replies

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${stableJson((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

function sameValue(a: unknown, b: unknown): boolean {
  return stableJson(a) === stableJson(b);
}

function preview(value: unknown, max = 240): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Why two replies differ in shape (JSON type and top-level keys), or undefined when they agree. */
function shapeMismatch(routine: JsonValue, expected: JsonValue, json: boolean): string | undefined {
  if (!json) return typeof routine === 'string' ? undefined : `the routine replied a ${jsonType(routine)}, the protocol's bodies are text`;
  const [a, b] = [jsonType(routine), jsonType(expected)];
  if (a !== b) return `the routine replied a ${a} ${preview(routine)} where a ${b} like ${preview(expected)} was expected`;
  if (a === 'object') {
    const keysA = Object.keys(routine as JsonObject).sort();
    const keysB = Object.keys(expected as JsonObject).sort();
    if (keysA.join('\u0000') !== keysB.join('\u0000')) return `the routine replied ${preview(routine)}, with keys [${keysA.join(', ')}], where [${keysB.join(', ')}] were expected, as in ${preview(expected)}`;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// The bookkeeping both sides share: counters, status with a short cache, workers of approved routines, failures.

type BookOptions = { dir: string; memory: AgentMemory; logger: Logger; now: () => number; sandbox: SandboxOptions; maxFailures: number };

type StatusEntry = { at: number; status: RoutineStatus | undefined; stamp: string | undefined };

/** How long a routine's status is trusted before memory is read again: how fast a CLI approval takes effect. */
const STATUS_TTL_MS = 1000;
/** How long batched counters wait before they are written. */
const COUNTER_FLUSH_MS = 1000;
/** A `generating` status older than this was left by a process that died mid-generation. */
const STALE_GENERATION_MS = 15 * 60_000;
/** Exchanges kept per protocol (or task) as examples. */
const EXAMPLE_CAP = 20;

class RoutineBook {
  readonly #options: BookOptions;
  readonly #pending = new Map<string, number>();
  #flushTimer: NodeJS.Timeout | undefined;
  readonly #statuses = new Map<string, StatusEntry>();
  readonly #reading = new Map<string, Promise<StatusEntry>>();
  readonly #modules = new Map<string, { stamp: string; module: Promise<SandboxedModule> }>();
  readonly #consecutive = new Map<string, number>();
  readonly #inflight = new Set<Promise<unknown>>();
  readonly #remembered = new Set<string>();
  readonly #exampleWrites = new Map<string, Promise<void>>();

  constructor(options: BookOptions) {
    this.#options = options;
  }

  get memory(): AgentMemory {
    return this.#options.memory;
  }

  /** Adds to a counter later (batched: a routine-served query costs no file write). */
  count(prefix: string, field: CounterField, by = 1): void {
    const key = `${prefix}/counters/${field}`;
    this.#pending.set(key, (this.#pending.get(key) ?? 0) + by);
    if (!this.#flushTimer) {
      this.#flushTimer = setTimeout(() => void this.flush().catch((error: unknown) => this.#options.logger.error(`routine counters not saved: ${describeError(error)}`)), COUNTER_FLUSH_MS);
      this.#flushTimer.unref();
    }
  }

  /** Adds to a counter now and returns its value. */
  async countNow(prefix: string, field: CounterField, by = 1): Promise<number> {
    const key = `${prefix}/counters/${field}`;
    const pending = this.#pending.get(key) ?? 0;
    this.#pending.delete(key);
    return this.memory.increment(key, by + pending);
  }

  /** Writes the batched counters. */
  async flush(): Promise<void> {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    const entries = [...this.#pending];
    this.#pending.clear();
    await Promise.all(entries.map(([key, by]) => this.memory.increment(key, by)));
  }

  /** Writes what the CLI needs to name a protocol or task that has counters but no routine yet, once per process. */
  async remember(prefix: string, meta: { kind: 'protocol' | 'task'; protocol: string; hash: string; task?: string }): Promise<void> {
    if (this.#remembered.has(prefix)) return;
    this.#remembered.add(prefix);
    await this.memory.set(`${prefix}/meta`, meta);
  }

  /** The status as memory has it now. */
  readStatus(prefix: string): Promise<RoutineStatus | undefined> {
    return this.memory.get(`${prefix}/status`) as Promise<RoutineStatus | undefined>;
  }

  async setStatus(prefix: string, status: RoutineStatus): Promise<void> {
    await this.memory.set(`${prefix}/status`, status as unknown as JsonValue);
    this.#statuses.delete(prefix);
  }

  /** The status and the file's stamp, re-read from memory at most every second (the CLI writes from another process). */
  async #entry(prefix: string): Promise<StatusEntry> {
    const cached = this.#statuses.get(prefix);
    if (cached && this.#options.now() - cached.at < STATUS_TTL_MS) return cached;
    let reading = this.#reading.get(prefix);
    if (!reading) {
      reading = (async () => {
        const status = await this.readStatus(prefix);
        let stamp: string | undefined;
        if (status?.file) {
          try {
            const info = await stat(resolve(this.#options.dir, status.file));
            stamp = `${status.updatedAt}|${info.mtimeMs}|${info.size}`;
          } catch {
            stamp = undefined;
          }
        }
        const entry = { at: this.#options.now(), status, stamp };
        this.#statuses.set(prefix, entry);
        return entry;
      })().finally(() => this.#reading.delete(prefix));
      this.#reading.set(prefix, reading);
    }
    return reading;
  }

  /** Whether an approved routine with its file exists for a prefix (cached as above). */
  async approved(prefix: string): Promise<boolean> {
    const entry = await this.#entry(prefix);
    const usable = entry.status?.status === 'approved' && entry.stamp !== undefined;
    if (!usable) this.#retire(prefix);
    return usable;
  }

  /** The worker of the approved routine, built from its file on first use; undefined when none is approved. */
  async module(prefix: string): Promise<SandboxedModule | undefined> {
    const entry = await this.#entry(prefix);
    if (entry.status?.status !== 'approved' || !entry.status.file || entry.stamp === undefined) {
      this.#retire(prefix);
      return undefined;
    }
    let loaded = this.#modules.get(prefix);
    if (!loaded || loaded.stamp !== entry.stamp) {
      this.#retire(prefix);
      const file = resolve(this.#options.dir, entry.status.file);
      const name = `agora routine ${entry.status.task ?? entry.status.protocol}`;
      const module = readFile(file, 'utf8')
        .then((code) => bundleGeneratedModule(code))
        .then((bundle) => new SandboxedModule(bundle, { ...this.#options.sandbox, name }));
      loaded = { stamp: entry.stamp, module };
      this.#modules.set(prefix, loaded);
      // A file that no longer builds is retried on the next status refresh, not cached as a failure forever.
      module.catch(() => {
        if (this.#modules.get(prefix) === loaded) this.#modules.delete(prefix);
      });
    }
    return loaded.module;
  }

  #retire(prefix: string): void {
    const loaded = this.#modules.get(prefix);
    if (!loaded) return;
    this.#modules.delete(prefix);
    loaded.module.then(
      (module) => module.close(),
      () => undefined,
    );
  }

  /** Records a failed run: counts it, and disables the routine after `maxFailures` in a row. */
  async failed(prefix: string, label: string, error: unknown): Promise<void> {
    this.count(prefix, 'failures');
    const consecutive = await this.memory.increment(`${prefix}/consecutive-failures`);
    this.#consecutive.set(prefix, consecutive);
    if (consecutive < this.#options.maxFailures) return;
    const status = await this.readStatus(prefix);
    if (status?.status === 'approved') {
      const reason = `${consecutive} failures in a row, the last: ${describeError(error)}`;
      await this.setStatus(prefix, { ...status, status: 'disabled', reason, updatedAt: new Date(this.#options.now()).toISOString() });
      this.#options.logger.error(`${label}: generated routine disabled after ${reason}; the LLM serves it again (agora routines approve re-enables it)`);
    }
    this.#retire(prefix);
  }

  /** Records a successful run: resets the failures in a row (one write, and only when it was not already 0). */
  async succeeded(prefix: string): Promise<void> {
    if (this.#consecutive.get(prefix) === 0) return;
    this.#consecutive.set(prefix, 0);
    await this.memory.set(`${prefix}/consecutive-failures`, 0);
  }

  /** Keeps an exchange as an example (the last {@link EXAMPLE_CAP}). */
  addExample(key: string, example: JsonObject): Promise<void> {
    // Served hooks overlap (the receiver does not await them): serialize the read-modify-write per key.
    const previous = this.#exampleWrites.get(key) ?? Promise.resolve();
    const write = previous.then(async () => {
      const current = await this.memory.get(key);
      const list = Array.isArray(current) ? current : [];
      await this.memory.set(key, [...list, example].slice(-EXAMPLE_CAP));
    });
    const tail = write.catch(() => undefined);
    this.#exampleWrites.set(key, tail);
    void tail.then(() => {
      if (this.#exampleWrites.get(key) === tail) this.#exampleWrites.delete(key);
    });
    return write;
  }

  async examples(key: string): Promise<JsonObject[]> {
    const current = await this.memory.get(key);
    return Array.isArray(current) ? current.filter((item): item is JsonObject => !!item && typeof item === 'object' && !Array.isArray(item)) : [];
  }

  /** Whether a status lets a new generation start: none, or a `generating` left by a dead process. */
  canGenerate(status: RoutineStatus | undefined): boolean {
    if (!status) return true;
    return status.status === 'generating' && this.#options.now() - Date.parse(status.updatedAt) > STALE_GENERATION_MS;
  }

  /** Tracks background work so `idle()` can wait for it. */
  track<T>(work: Promise<T>): Promise<T> {
    this.#inflight.add(work);
    const done = () => void this.#inflight.delete(work);
    work.then(done, done);
    return work;
  }

  async idle(): Promise<void> {
    // The receiver schedules `served` in a microtask after the reply: let it start first.
    await new Promise((done) => setImmediate(done));
    while (this.#inflight.size) {
      await Promise.allSettled([...this.#inflight]);
      await new Promise((done) => setImmediate(done));
    }
  }

  async close(): Promise<void> {
    await this.flush();
    for (const prefix of [...this.#modules.keys()]) this.#retire(prefix);
    this.#statuses.clear();
  }
}

function iso(now: () => number): string {
  return new Date(now()).toISOString();
}

function toolbox(tools: readonly Tool[]): Record<string, (input: unknown) => Promise<unknown>> {
  return Object.fromEntries(tools.map((tool) => [tool.name, (input: unknown) => callTool(tool, input)]));
}

// ---------------------------------------------------------------------------------------------------------------
// Receiver side

/** Options of {@link RoutineGenerator}. */
export type RoutineGeneratorOptions = {
  /** The agent folder: modules are written to `<dir>/routines/generated/`. */
  dir: string;
  memory: AgentMemory;
  llm: LanguageModel;
  /** The agent's tools, read when a routine is written, checked or run. */
  tools: () => readonly Tool[];
  /** How the agent presents itself to its LLM when the checks ask it for reference answers (default: its tools only). */
  profile?: () => AgentProfile;
  logger?: Logger;
  /** LLM-served conversations under a protocol before a routine is written (default 5; 0 never writes one). */
  threshold?: number;
  /** LLM attempts at a module that passes the checks (default 3). */
  maxAttempts?: number;
  /** Use a routine as soon as it passes the checks, without review (default false). */
  autoApprove?: boolean;
  /** Time limit per run, in ms (default 2000). */
  timeoutMs?: number;
  /** Heap limit of a routine's worker, in MB (default 64). */
  memoryLimitMb?: number;
  /** Failures in a row before a routine is disabled (default 3). */
  maxFailures?: number;
  /** Queries the LLM writes from the PD to check a routine on, besides the recorded ones (default 3). */
  checkQueries?: number;
  /** Called after each LLM call made to write or check a routine, with the protocol's name. */
  onUsage?: GenerationUsageSink;
  /** A shared type checker (default: one of its own). */
  typeChecker?: RoutineTypeChecker;
  /** Clock in Unix milliseconds. */
  now?: () => number;
};

type StoredExample = { conversationId: string | null; turn: number; body: JsonValue; reply: JsonValue };

type Probe = { body: JsonValue; reply: JsonValue };

const ROUTINE_SYSTEM = [
  'You write routines for an agent on the Agora network. A routine is a TypeScript module that answers queries under a protocol document without an LLM, so that frequent queries cost nothing.',
  `Reply with the whole module in one ${FENCE}ts code block and nothing else.`,
  '',
  'The module must follow this contract exactly:',
  `${FENCE}ts`,
  "import { defineRoutine } from 'agora-agents';",
  "import { z } from 'zod';",
  '',
  'export default defineRoutine({',
  '  input: z.object({ /* the body the sender sends, as the protocol describes it */ }),',
  '  output: /* a zod schema accepting every reply the protocol allows, its error replies included */,',
  '  async handle(body, context) {',
  '    // body is the parsed input; return the reply body',
  '  },',
  '});',
  FENCE,
  '',
  'Rules:',
  "- Import only 'agora-agents' (defineRoutine and its types) and 'zod' (zod 4). No other import, no require(), no import(), no fetch, no file system, no process, no environment variables: the module runs in an isolated worker where none of these exist.",
  '- Data comes only from the agent\'s tools: `await context.tools.<name>(input)` validates the input, runs the tool and resolves to its output (typed unknown: check it with zod before use); it rejects when the tool fails.',
  '- For a multiround protocol, keep what later turns need in `context.conversation.state`, a JSON object you mutate; `context.conversation.turn` is 1 on the first turn.',
  '- Reply exactly as the protocol prescribes: the same JSON keys and value types as the recorded replies, and the protocol\'s own error replies where the body or the data calls for one.',
  '- When the body does not match the input schema, the protocol\'s "invalid" error reply is sent for you if the protocol prescribes one: do not make the input schema stricter than the protocol.',
  '- Be deterministic: the same body and tool outputs must give the same reply. No timers, no randomness.',
  '- The module is compiled with strict TypeScript. `context` is a RoutineContext: { conversation: { id: string | null; turn: number; state: JsonObject }; protocol: { name: string; hash: string; metadata: Record<string, unknown> }; logger: { info(message: string): void; warn(message: string): void; error(message: string): void }; tools: Record<string, (input: unknown) => Promise<unknown>>; signal: AbortSignal }.',
].join('\n');

const QUERIES_SYSTEM = 'You write test queries for a protocol document that two agents use to talk. Reply with only a JSON array, no prose, no code fence.';

function describeTools(tools: readonly Tool[]): string {
  if (!tools.length) return 'The agent has no tools: compute the reply from the body alone.';
  return [
    'The agent\'s tools (call them as `await context.tools.<name>(input)`):',
    ...tools.map((tool) => `- ${tool.name}: ${tool.description}\n  input (JSON Schema): ${JSON.stringify(toolInputJsonSchema(tool))}`),
  ].join('\n');
}

/** Recorded exchanges in conversation order; a conversation whose first turns were not recorded is left out. */
function replayable(examples: readonly StoredExample[]): StoredExample[][] {
  const groups = new Map<string, StoredExample[]>();
  examples.forEach((example, index) => {
    const key = example.conversationId ?? `single-${index}`;
    groups.set(key, [...(groups.get(key) ?? []), example]);
  });
  const result: StoredExample[][] = [];
  for (const turns of groups.values()) {
    const sorted = [...turns].sort((a, b) => a.turn - b.turn);
    if (sorted.every((example, index) => example.turn === index + 1)) result.push(sorted);
  }
  return result;
}

function parseStoredExample(value: JsonObject): StoredExample | undefined {
  if (!('body' in value) || !('reply' in value)) return undefined;
  const turn = typeof value.turn === 'number' ? value.turn : 1;
  const conversationId = typeof value.conversationId === 'string' ? value.conversationId : null;
  return { conversationId, turn, body: value.body as JsonValue, reply: value.reply as JsonValue };
}

/**
 * Writes routines for the protocols the LLM serves most, with the LLM, checked before they run; serves the
 * approved ones from worker threads. Plug it into a Receiver with `extensions: generator.extensions()`.
 * @example
 * const generator = new RoutineGenerator({ dir, memory, llm, tools: () => receiver.tools });
 * const receiver = await Receiver.start({ dir, memory, llm, extensions: generator.extensions() });
 */
export class RoutineGenerator {
  readonly #options: RoutineGeneratorOptions;
  readonly #book: RoutineBook;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #typeChecker: RoutineTypeChecker;
  readonly #ownsTypeChecker: boolean;
  readonly #generating = new Map<string, Promise<RoutineStatus>>();
  readonly #runners = new Map<string, RoutineRunner>();
  #closed = false;

  constructor(options: RoutineGeneratorOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#now = options.now ?? Date.now;
    this.#ownsTypeChecker = !options.typeChecker;
    this.#typeChecker = options.typeChecker ?? new RoutineTypeChecker();
    this.#book = new RoutineBook({
      dir: resolve(options.dir),
      memory: options.memory,
      logger: this.#logger,
      now: this.#now,
      maxFailures: options.maxFailures ?? 3,
      sandbox: { timeoutMs: options.timeoutMs ?? 2000, memoryLimitMb: options.memoryLimitMb ?? 64 },
    });
  }

  /** The receiver hooks: `routineFor` (approved routines only) and `served` (counting, examples, generation). */
  extensions(): Pick<ReceiverExtensions, 'routineFor' | 'served'> {
    return {
      routineFor: (hash, document) => this.routineFor(hash, document),
      served: (event) => this.served(event),
    };
  }

  /** Counts an answered turn, keeps LLM answers as examples, and starts writing a routine at the threshold. */
  served(event: ServedEvent): Promise<void> {
    return this.#book.track(this.#served(event));
  }

  async #served(event: ServedEvent): Promise<void> {
    if (event.hash === null || !event.document || event.path === 'failure') return;
    const document = event.document;
    const prefix = `routines/${document.hash}`;
    await this.#book.remember(prefix, { kind: 'protocol', protocol: document.metadata.name, hash: document.hash });
    if (event.firstTurn) this.#book.count(prefix, 'uses');
    if (event.path === 'routine') {
      if (event.firstTurn) this.#book.count(prefix, 'routine');
      return;
    }
    if (event.reply !== undefined) {
      await this.#book.addExample(`examples/${document.hash}`, { conversationId: event.conversationId, turn: event.turn, body: event.body, reply: event.reply, at: iso(this.#now) });
    }
    if (!event.firstTurn) return;
    const llm = await this.#book.countNow(prefix, 'llm');
    const threshold = this.#options.threshold ?? 5;
    if (threshold <= 0 || llm < threshold || this.#generating.has(document.hash)) return;
    if (!this.#book.canGenerate(await this.#book.readStatus(prefix))) return;
    this.generate(document).catch((error: unknown) => this.#logger.error(`"${document.metadata.name}": writing a routine failed: ${describeError(error)}`));
  }

  /** A runner for an approved routine with its file in place, else undefined (approval is re-read every second). */
  async routineFor(hash: string, document: ProtocolDocument): Promise<RoutineRunner | undefined> {
    const prefix = `routines/${hash}`;
    if (!(await this.#book.approved(prefix))) return undefined;
    let runner = this.#runners.get(hash);
    if (!runner) {
      runner = this.#runner(prefix, document);
      this.#runners.set(hash, runner);
    }
    return runner;
  }

  #runner(prefix: string, document: ProtocolDocument): RoutineRunner {
    const label = `"${document.metadata.name}"`;
    return async (body, context) => {
      try {
        const module = await this.#book.module(prefix);
        if (!module) throw new Error('the routine is no longer approved');
        const result = await module.run('handle', body, {
          conversation: context.conversation,
          protocol: context.protocol,
          tools: context.tools,
          logger: context.logger,
        });
        const reply = answerOf(result, document);
        // The turn's state object is the one the receiver saves: refill it rather than replace it.
        if (result.state) {
          const state = context.conversation.state;
          for (const key of Object.keys(state)) delete state[key];
          Object.assign(state, result.state);
        }
        await this.#book.succeeded(prefix);
        return reply;
      } catch (error) {
        await this.#book.failed(prefix, label, error).catch((failure: unknown) => this.#logger.error(`${label}: routine failure not recorded: ${describeError(failure)}`));
        throw new AgoraError('ROUTINE_FAILED', 'Routine failed', { cause: error });
      }
    };
  }

  /** Writes and checks a routine for a protocol now (in the background it starts at the threshold). */
  generate(document: ProtocolDocument): Promise<RoutineStatus> {
    const running = this.#generating.get(document.hash);
    if (running) return running;
    const work = this.#generate(document).finally(() => this.#generating.delete(document.hash));
    this.#generating.set(document.hash, work);
    return this.#book.track(work);
  }

  async #generate(document: ProtocolDocument): Promise<RoutineStatus> {
    const prefix = `routines/${document.hash}`;
    const name = document.metadata.name;
    const createdAt = iso(this.#now);
    const base = { kind: 'protocol' as const, protocol: name, hash: document.hash, createdAt };
    await this.#book.setStatus(prefix, { ...base, status: 'generating', updatedAt: createdAt });
    this.#logger.info(`"${name}": writing a routine with ${this.#options.llm.model}`);
    let status: RoutineStatus;
    try {
      const examples = (await this.#book.examples(`examples/${document.hash}`)).map(parseStoredExample).filter((example): example is StoredExample => example !== undefined);
      let probes: Promise<Probe[]> | undefined;
      const written = await writeCheckedModule({
        llm: this.#options.llm,
        system: ROUTINE_SYSTEM,
        prompt: this.#prompt(document, examples),
        kind: 'routine',
        maxAttempts: this.#options.maxAttempts ?? 3,
        typeChecker: this.#typeChecker,
        sandbox: { timeoutMs: this.#options.timeoutMs ?? 2000, memoryLimitMb: this.#options.memoryLimitMb ?? 64 },
        label: `"${name}"`,
        usageLabel: name,
        logger: this.#logger,
        ...(this.#options.onUsage ? { onUsage: this.#options.onUsage } : {}),
        // The reference answers do not depend on the module: asked once, on the first attempt that builds.
        check: async (module) => this.#check(module, document, examples, await (probes ??= this.#probes(document))),
      });
      // Shut down mid-way: the checks failed for that reason, so leave `generating` to go stale and be retried.
      if (this.#closed) return { ...base, status: 'generating', updatedAt: createdAt };
      if (written.ok) {
        const stem = protocolStem(document);
        const file = `routines/generated/${stem}.ts`;
        const header = fileHeader({ stem, what: `Protocol: ${name}`, hash: document.hash, model: written.model, checks: written.checks, date: createdAt });
        await writeFileAtomic(join(resolve(this.#options.dir), file), header + written.code);
        const approved = this.#options.autoApprove === true;
        status = { ...base, status: approved ? 'approved' : 'pending', file, checks: written.checks, attempts: written.attempts, model: written.model, typeCheckMs: written.typeCheckMs, updatedAt: iso(this.#now), ...(approved ? { reviewedAt: iso(this.#now) } : {}) };
        this.#logger.info(`"${name}": routine written to ${file} after ${written.attempts} attempt(s); ${approved ? 'approved automatically' : `review it, then: agora routines approve ${stem}`}`);
      } else {
        status = { ...base, status: 'failed', errors: written.errors.slice(0, 20), attempts: written.attempts, model: written.model, updatedAt: iso(this.#now) };
        this.#logger.warn(`"${name}": no routine after ${written.attempts} attempt(s), the LLM keeps serving it: ${written.errors[0] ?? 'unknown error'}`);
      }
    } catch (error) {
      status = { ...base, status: 'failed', errors: [describeError(error)], updatedAt: iso(this.#now) };
      this.#logger.warn(`"${name}": no routine, the LLM keeps serving it: ${describeError(error)}`);
    }
    await this.#book.setStatus(prefix, status);
    return status;
  }

  #prompt(document: ProtocolDocument, examples: readonly StoredExample[]): string {
    const json = prescribesJson(document);
    const lines = ['The protocol document:', '<protocol>', document.text.trim(), '</protocol>', ''];
    if (!json) lines.push("This protocol's bodies are text: use z.string() for the input and the output.", '');
    lines.push(describeTools(this.#options.tools()), '');
    if (examples.length) {
      lines.push("Recorded exchanges, answered by the agent's LLM (your routine must give the same replies):");
      examples.forEach((example, index) => {
        const where = example.conversationId ? `conversation ${example.conversationId.slice(0, 6)}, turn ${example.turn}` : 'single query';
        lines.push(`${index + 1}. ${where}: body ${JSON.stringify(example.body)} → reply ${JSON.stringify(example.reply)}`);
      });
    }
    return lines.join('\n');
  }

  /** Queries the LLM writes from the PD, with the LLM responder's answers (a failed one is left out). */
  async #probes(document: ProtocolDocument): Promise<Probe[]> {
    const count = this.#options.checkQueries ?? 3;
    if (count <= 0) return [];
    const json = prescribesJson(document);
    const onUsage = this.#options.onUsage ? (usage: LlmUsage & { model: string }) => this.#options.onUsage?.(usage, document.metadata.name) : undefined;
    let bodies: JsonValue[] = [];
    try {
      const prompt = [
        '<protocol>',
        document.text.trim(),
        '</protocol>',
        '',
        `Write ${count} different bodies a sender could send as the first query under this protocol: typical ones, and one edge case the protocol covers (such as one of its error replies).`,
        `Reply with only a JSON array of the ${count} bodies${json ? '' : ' (strings)'}.`,
      ].join('\n');
      const result = await converse(this.#options.llm, { system: QUERIES_SYSTEM, messages: [{ role: 'user', content: prompt }], maxSteps: 1, temperature: 0, ...(onUsage ? { onUsage } : {}) });
      const parsed = extractJson(result.text);
      const list = parsed.ok ? z.array(z.unknown()).safeParse(parsed.value) : undefined;
      if (list?.success) bodies = (list.data as JsonValue[]).slice(0, count);
      else this.#logger.warn(`"${document.metadata.name}": the LLM wrote no usable test queries`);
    } catch (error) {
      this.#logger.warn(`"${document.metadata.name}": no test queries: ${describeError(error)}`);
    }
    const tools = this.#options.tools();
    const profile = this.#options.profile?.() ?? { name: 'agent', description: '', protocols: [], tools };
    const probes: Probe[] = [];
    for (const body of bodies) {
      try {
        const reply = await answerUnderProtocol({ model: this.#options.llm, profile, ...(onUsage ? { onUsage } : {}) }, document, [], body);
        probes.push({ body, reply });
      } catch (error) {
        this.#logger.warn(`"${document.metadata.name}": no reference answer for ${preview(body, 80)}: ${describeError(error)}`);
      }
    }
    return probes;
  }

  /** Runs a candidate on the recorded exchanges (by value when deterministic) and on the probes (by shape). */
  async #check(module: SandboxedModule, document: ProtocolDocument, examples: readonly StoredExample[], probes: readonly Probe[]): Promise<{ errors: string[]; passed: string[] }> {
    const json = prescribesJson(document);
    const tools = toolbox(this.#options.tools());
    const errors: string[] = [];
    let byValue = 0;
    let byShape = 0;
    const run = async (body: JsonValue, turn: number, id: string | null, state: JsonObject): Promise<{ reply: JsonValue; state: JsonObject }> => {
      const result = await module.run('handle', body, {
        conversation: { id, turn, state: structuredClone(state) },
        protocol: { name: document.metadata.name, hash: document.hash, metadata: document.metadata },
        tools,
        logger: silentLogger,
      });
      return { reply: answerOf(result, document), state: result.state ?? state };
    };
    const checkOutput = async (label: string, reply: JsonValue) => {
      const issues = (await module.run('checkOutput', reply)).value;
      if (typeof issues === 'string') errors.push(`${label}: the output schema refuses the expected reply ${preview(reply)}: ${issues}`);
    };

    const conversations = replayable(examples);
    for (const [index, turns] of conversations.entries()) {
      let state: JsonObject = {};
      for (const example of turns) {
        const label = turns.length > 1 ? `recorded conversation ${index + 1}, turn ${example.turn}` : `recorded example ${index + 1}`;
        const id = example.conversationId ? `check-${index + 1}` : null;
        let first: { reply: JsonValue; state: JsonObject };
        let second: { reply: JsonValue; state: JsonObject } | undefined;
        try {
          first = await run(example.body, example.turn, id, state);
          // Twice: a reply that changes between two runs comes from a clock or a live tool, compared by shape only.
          second = await run(example.body, example.turn, id, state).catch(() => undefined);
        } catch (error) {
          errors.push(`${label}: body ${preview(example.body)}: the routine failed: ${error instanceof Error ? error.message : String(error)}`);
          break;
        }
        const deterministic = second !== undefined && sameValue(first.reply, second.reply);
        if (json && deterministic) {
          if (!sameValue(first.reply, example.reply)) errors.push(`${label}: body ${preview(example.body)}: the routine replied ${preview(first.reply)} but the recorded reply is ${preview(example.reply)}`);
          else byValue++;
        } else {
          const mismatch = shapeMismatch(first.reply, example.reply, json);
          if (mismatch) errors.push(`${label}: body ${preview(example.body)}: ${mismatch}`);
          else byShape++;
        }
        if (json) await checkOutput(label, example.reply);
        state = first.state;
      }
    }
    let probed = 0;
    for (const [index, probe] of probes.entries()) {
      const label = `test query ${index + 1}`;
      try {
        const { reply } = await run(probe.body, 1, prescribesMultiround(document) ? `probe-${index + 1}` : null, {});
        const mismatch = shapeMismatch(reply, probe.reply, json);
        if (mismatch) errors.push(`${label}: body ${preview(probe.body)}: ${mismatch} (the LLM's answer)`);
        else probed++;
        if (json) await checkOutput(label, probe.reply);
      } catch (error) {
        errors.push(`${label}: body ${preview(probe.body)}: the routine failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    const recorded = byValue + byShape;
    if (!errors.length && recorded + probed === 0) errors.push('nothing to check the routine on: no recorded exchange and no test query');
    const passed: string[] = [];
    if (recorded) passed.push(`${recorded} recorded turn(s) (${byValue} by value, ${byShape} by shape)`);
    if (probed) passed.push(`${probed} test query(ies) written by the LLM (shape vs the LLM's answer)`);
    return { errors, passed };
  }

  /** Resolves once counting, example keeping and routine writing started so far are done (tests, shutdown). */
  idle(): Promise<void> {
    return this.#book.idle();
  }

  /** Writes batched counters. */
  flush(): Promise<void> {
    return this.#book.flush();
  }

  /** Writes batched counters and stops the workers (a generation under way is abandoned, and retried later). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#book.close();
    this.#runners.clear();
    if (this.#ownsTypeChecker) await this.#typeChecker.close();
  }
}

function prescribesMultiround(document: ProtocolDocument): boolean {
  return document.metadata.multiround === true;
}

/** The reply of a sandboxed `handle`: its value, or the PD's invalid-input reply when the input schema refused the body. */
function answerOf(result: SandboxResult, document: ProtocolDocument): JsonValue {
  if (!result.invalid) return result.value;
  const reply = result.invalid.reply ?? protocolInvalidInputReply(document);
  // No prescribed error reply: let the LLM judge a body the generated schema refuses (the schema is a guess).
  if (reply === undefined) throw new Error(`the routine's input schema refuses the body: ${result.invalid.issues}`);
  return reply;
}

// ---------------------------------------------------------------------------------------------------------------
// Sender side

/** A task as the sender's LLM-written routines see it: its schemas as JSON Schema. */
export type TaskRoutineSpec = { name: string; description: string; inputJsonSchema: unknown; outputJsonSchema: unknown };

/** A recorded task call: the task's input, the body sent, the reply received, the task's output. */
export type TaskExample = { input: unknown; body: unknown; reply: unknown; output: unknown };

/** Options of {@link generateTaskRoutine}. */
export type GenerateTaskRoutineOptions = {
  llm: LanguageModel;
  task: TaskRoutineSpec;
  document: ProtocolDocument;
  examples: readonly TaskExample[];
  maxAttempts?: number;
  timeoutMs?: number;
  memoryLimitMb?: number;
  /** Extra check of each output (e.g. the task's zod schema): a message when it is wrong. */
  validateOutput?: (output: unknown) => string | undefined;
  typeChecker?: RoutineTypeChecker;
  logger?: Logger;
  onUsage?: GenerationUsageSink;
};

const TASK_SYSTEM = [
  'You write task routines for an agent on the Agora network. The agent performs a task by querying another agent under a protocol document; a task routine does the two LLM steps of that call in code: it builds the query body from the task\'s input, and reads the task\'s output from the reply.',
  `Reply with the whole module in one ${FENCE}ts code block and nothing else.`,
  '',
  'The module must follow this contract exactly:',
  `${FENCE}ts`,
  "import { z } from 'zod';",
  '',
  'export default {',
  '  buildBody(input: /* the task\'s input type */): unknown {',
  '    // the body to send, exactly as the protocol prescribes',
  '  },',
  '  parseReply(body: unknown): /* the task\'s output type */ {',
  "    // the task's output read from the reply; throw an Error when the reply is not what the protocol promises",
  '  },',
  '};',
  FENCE,
  '',
  'Rules:',
  "- Import only 'zod' (zod 4). No other import, no require(), no import(), no fetch, no file system, no process: the module runs in an isolated worker where none of these exist.",
  '- Pure and deterministic functions: the same input gives the same body, the same reply the same output.',
  '- Strict TypeScript: type the parameters; check the reply with zod before reading it.',
  '- Match the recorded calls exactly: the same body for the same input, the same output for the same reply.',
].join('\n');

/**
 * Writes a sender routine (`export default { buildBody, parseReply }`) for a task under a PD with the LLM, then
 * type-checks it and runs it in a worker on the recorded calls: bodies and outputs must equal the recorded ones.
 */
export async function generateTaskRoutine(options: GenerateTaskRoutineOptions): Promise<WrittenModule> {
  const typeChecker = options.typeChecker ?? new RoutineTypeChecker();
  const json = prescribesJson(options.document);
  const { task, document } = options;
  const examples = options.examples.slice(-EXAMPLE_CAP);
  const prompt = [
    `The task: ${task.name}: ${task.description}`,
    `Its input (JSON Schema): ${JSON.stringify(task.inputJsonSchema)}`,
    `Its output (JSON Schema): ${JSON.stringify(task.outputJsonSchema)}`,
    '',
    'The protocol document:',
    '<protocol>',
    document.text.trim(),
    '</protocol>',
    '',
    'Recorded calls, made by the agent\'s LLM:',
    ...examples.map((example, index) => `${index + 1}. input ${JSON.stringify(example.input)} → body ${JSON.stringify(example.body)}; reply ${JSON.stringify(example.reply)} → output ${JSON.stringify(example.output)}`),
  ].join('\n');
  const check: ModuleChecks = async (module) => {
    const errors: string[] = [];
    let checked = 0;
    for (const [index, example] of examples.entries()) {
      const label = `recorded call ${index + 1}`;
      try {
        const body = (await module.run('buildBody', example.input)).value;
        if (json ? !sameValue(body, example.body) : typeof body !== typeof example.body) {
          errors.push(`${label}: buildBody(${preview(example.input)}) returned ${preview(body)} but the recorded body is ${preview(example.body)}`);
        }
        const output = (await module.run('parseReply', example.reply)).value;
        if (!sameValue(output, example.output)) errors.push(`${label}: parseReply(${preview(example.reply)}) returned ${preview(output)} but the recorded output is ${preview(example.output)}`);
        const invalid = options.validateOutput?.(output);
        if (invalid) errors.push(`${label}: parseReply's output does not match the task's output schema: ${invalid}`);
        checked++;
      } catch (error) {
        errors.push(`${label}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    if (!errors.length && checked === 0) errors.push('nothing to check the routine on: no recorded call');
    return { errors, passed: checked ? [`${checked} recorded call(s) (body and output by value)`] : [] };
  };
  try {
    return await writeCheckedModule({
      llm: options.llm,
      system: TASK_SYSTEM,
      prompt,
      kind: 'task',
      maxAttempts: options.maxAttempts ?? 3,
      typeChecker,
      sandbox: { timeoutMs: options.timeoutMs ?? 2000, memoryLimitMb: options.memoryLimitMb ?? 64 },
      check,
      label: `task "${task.name}"`,
      usageLabel: document.metadata.name,
      logger: options.logger ?? silentLogger,
      ...(options.onUsage ? { onUsage: options.onUsage } : {}),
    });
  } finally {
    if (!options.typeChecker) await typeChecker.close();
  }
}

/** A task as the sender knows it (the shape of `SenderExtensions.taskRoutine`'s first argument). */
export type TaskDefinition = { name: string; description: string; input: ZodType; output: ZodType };

/** A sender routine, run in a worker: what `SenderExtensions.taskRoutine` returns. */
export type TaskRoutineRunner = { buildBody(input: unknown): Promise<unknown>; parseReply(body: unknown): Promise<unknown> };

/** What the sender reports after each task call (the shape of `SenderExtensions.served`'s argument). */
export type TaskCallEvent = { task: string; target: string; hash: string | null; input: unknown; body: unknown; reply: unknown; output: unknown; llmCalls: number };

/** Options of {@link TaskRoutineStore}: as {@link RoutineGeneratorOptions}, without tools (sender routines are pure). */
export type TaskRoutineStoreOptions = Omit<RoutineGeneratorOptions, 'tools' | 'profile' | 'checkQueries'>;

function jsonSchemaOf(schema: ZodType, io: 'input' | 'output'): unknown {
  try {
    const json = z.toJSONSchema(schema, { unrepresentable: 'any', io }) as Record<string, unknown>;
    delete json.$schema;
    return json;
  } catch {
    return {};
  }
}

function jsonCopy(value: unknown): JsonValue {
  const text = JSON.stringify(value);
  return text === undefined ? null : (JSON.parse(text) as JsonValue);
}

/**
 * Sender routines by task and PD: records LLM-made task calls as examples, writes a routine after the threshold,
 * and hands out worker-backed runners once approved. Plug it into a Sender with `extensions: store.extensions()`.
 * @example const store = new TaskRoutineStore({ dir, memory, llm }); const sender = new Sender({ llm, extensions: store.extensions() });
 */
export class TaskRoutineStore {
  readonly #options: TaskRoutineStoreOptions;
  readonly #book: RoutineBook;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #typeChecker: RoutineTypeChecker;
  readonly #ownsTypeChecker: boolean;
  readonly #tasks = new Map<string, { task: TaskDefinition; document: ProtocolDocument }>();
  /** Prefixes past the threshold whose task definition was not known yet when the last call was counted. */
  readonly #due = new Set<string>();
  readonly #generating = new Map<string, Promise<RoutineStatus>>();
  #closed = false;

  constructor(options: TaskRoutineStoreOptions) {
    this.#options = options;
    this.#logger = options.logger ?? silentLogger;
    this.#now = options.now ?? Date.now;
    this.#ownsTypeChecker = !options.typeChecker;
    this.#typeChecker = options.typeChecker ?? new RoutineTypeChecker();
    this.#book = new RoutineBook({
      dir: resolve(options.dir),
      memory: options.memory,
      logger: this.#logger,
      now: this.#now,
      maxFailures: options.maxFailures ?? 3,
      sandbox: { timeoutMs: options.timeoutMs ?? 2000, memoryLimitMb: options.memoryLimitMb ?? 64 },
    });
  }

  /** The sender hooks: `taskRoutine` and `served`. */
  extensions(): { taskRoutine(task: TaskDefinition, document: ProtocolDocument): Promise<TaskRoutineRunner | undefined>; served(event: TaskCallEvent): Promise<void> } {
    return { taskRoutine: (task, document) => this.taskRoutine(task, document), served: (event) => this.served(event) };
  }

  /** The approved routine for a task under a PD, as worker-backed functions; undefined when none is approved. */
  async taskRoutine(task: TaskDefinition, document: ProtocolDocument): Promise<TaskRoutineRunner | undefined> {
    const prefix = this.#prefix(task.name, document.hash);
    this.#tasks.set(prefix, { task, document });
    if (this.#due.delete(prefix)) this.#start(prefix);
    if (!(await this.#book.approved(prefix))) return undefined;
    const label = `task "${task.name}"`;
    const call = async (method: 'buildBody' | 'parseReply', payload: unknown): Promise<unknown> => {
      try {
        const module = await this.#book.module(prefix);
        if (!module) throw new Error('the routine is no longer approved');
        let value: unknown = (await module.run(method, jsonCopy(payload))).value;
        if (method === 'parseReply') {
          const parsed = task.output.safeParse(value);
          if (!parsed.success) throw new Error(`the output does not match the task's schema: ${z.prettifyError(parsed.error)}`);
          value = parsed.data;
        }
        await this.#book.succeeded(prefix);
        return value;
      } catch (error) {
        await this.#book.failed(prefix, label, error).catch((failure: unknown) => this.#logger.error(`${label}: routine failure not recorded: ${describeError(failure)}`));
        throw new AgoraError('ROUTINE_FAILED', 'Routine failed', { cause: error });
      }
    };
    return { buildBody: (input) => call('buildBody', input), parseReply: (body) => call('parseReply', body) };
  }

  /** Counts a task call, keeps LLM-made calls as examples, and writes a routine at the threshold. */
  served(event: TaskCallEvent): Promise<void> {
    return this.#book.track(this.#served(event));
  }

  async #served(event: TaskCallEvent): Promise<void> {
    const hash = event.hash === null ? undefined : normalizeHash(event.hash);
    if (!hash) return;
    const prefix = this.#prefix(event.task, hash);
    const known = this.#tasks.get(prefix);
    await this.#book.remember(prefix, { kind: 'task', task: event.task, protocol: known?.document.metadata.name ?? '', hash });
    this.#book.count(prefix, 'uses');
    if (event.llmCalls === 0) {
      this.#book.count(prefix, 'routine');
      return;
    }
    await this.#book.addExample(`${prefix}/examples`, { input: jsonCopy(event.input), body: jsonCopy(event.body), reply: jsonCopy(event.reply), output: jsonCopy(event.output), at: iso(this.#now) });
    const llm = await this.#book.countNow(prefix, 'llm');
    const threshold = this.#options.threshold ?? 5;
    if (threshold <= 0 || llm < threshold || this.#generating.has(prefix)) return;
    if (!this.#book.canGenerate(await this.#book.readStatus(prefix))) return;
    if (known) this.#start(prefix);
    else this.#due.add(prefix);
  }

  #start(prefix: string): void {
    const known = this.#tasks.get(prefix);
    if (!known) return;
    this.generate(known.task, known.document).catch((error: unknown) => this.#logger.error(`task "${known.task.name}": writing a routine failed: ${describeError(error)}`));
  }

  /** Writes and checks a sender routine for a task under a PD now, from the recorded calls. */
  generate(task: TaskDefinition, document: ProtocolDocument): Promise<RoutineStatus> {
    const prefix = this.#prefix(task.name, document.hash);
    this.#tasks.set(prefix, { task, document });
    const running = this.#generating.get(prefix);
    if (running) return running;
    const work = this.#generate(prefix, task, document).finally(() => this.#generating.delete(prefix));
    this.#generating.set(prefix, work);
    return this.#book.track(work);
  }

  async #generate(prefix: string, task: TaskDefinition, document: ProtocolDocument): Promise<RoutineStatus> {
    const createdAt = iso(this.#now);
    const base = { kind: 'task' as const, task: task.name, protocol: document.metadata.name, hash: document.hash, createdAt };
    await this.#book.setStatus(prefix, { ...base, status: 'generating', updatedAt: createdAt });
    await this.#book.memory.set(`${prefix}/meta`, { kind: 'task', task: task.name, protocol: document.metadata.name, hash: document.hash });
    let status: RoutineStatus;
    try {
      const examples = (await this.#book.examples(`${prefix}/examples`)).map((example) => ({ input: example.input, body: example.body, reply: example.reply, output: example.output }));
      const written = await generateTaskRoutine({
        llm: this.#options.llm,
        task: { name: task.name, description: task.description, inputJsonSchema: jsonSchemaOf(task.input, 'input'), outputJsonSchema: jsonSchemaOf(task.output, 'output') },
        document,
        examples,
        typeChecker: this.#typeChecker,
        logger: this.#logger,
        validateOutput: (output) => {
          const parsed = task.output.safeParse(output);
          return parsed.success ? undefined : z.prettifyError(parsed.error);
        },
        ...(this.#options.maxAttempts !== undefined ? { maxAttempts: this.#options.maxAttempts } : {}),
        ...(this.#options.timeoutMs !== undefined ? { timeoutMs: this.#options.timeoutMs } : {}),
        ...(this.#options.memoryLimitMb !== undefined ? { memoryLimitMb: this.#options.memoryLimitMb } : {}),
        ...(this.#options.onUsage ? { onUsage: this.#options.onUsage } : {}),
      });
      if (this.#closed) return { ...base, status: 'generating', updatedAt: createdAt };
      if (written.ok) {
        const stem = taskStem(task.name, document.hash);
        const file = `routines/generated/${stem}.ts`;
        const header = fileHeader({ stem, what: `Task: ${task.name}, under protocol: ${document.metadata.name}`, hash: document.hash, model: written.model, checks: written.checks, date: createdAt });
        await writeFileAtomic(join(resolve(this.#options.dir), file), header + written.code);
        const approved = this.#options.autoApprove === true;
        status = { ...base, status: approved ? 'approved' : 'pending', file, checks: written.checks, attempts: written.attempts, model: written.model, typeCheckMs: written.typeCheckMs, updatedAt: iso(this.#now), ...(approved ? { reviewedAt: iso(this.#now) } : {}) };
        this.#logger.info(`task "${task.name}": sender routine written to ${file}; ${approved ? 'approved automatically' : `review it, then: agora routines approve ${stem}`}`);
      } else {
        status = { ...base, status: 'failed', errors: written.errors.slice(0, 20), attempts: written.attempts, model: written.model, updatedAt: iso(this.#now) };
        this.#logger.warn(`task "${task.name}": no sender routine after ${written.attempts} attempt(s), the LLM keeps doing it: ${written.errors[0] ?? 'unknown error'}`);
      }
    } catch (error) {
      status = { ...base, status: 'failed', errors: [describeError(error)], updatedAt: iso(this.#now) };
      this.#logger.warn(`task "${task.name}": no sender routine: ${describeError(error)}`);
    }
    await this.#book.setStatus(prefix, status);
    return status;
  }

  #prefix(task: string, hash: string): string {
    return `task-routines/${routineSlug(task)}/${hash}`;
  }

  /** Resolves once counting and routine writing started so far are done. */
  idle(): Promise<void> {
    return this.#book.idle();
  }

  /** Writes batched counters. */
  flush(): Promise<void> {
    return this.#book.flush();
  }

  /** Writes batched counters and stops the workers (a generation under way is abandoned, and retried later). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#book.close();
    if (this.#ownsTypeChecker) await this.#typeChecker.close();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Review: what `agora routines` lists, shows, approves and rejects.

/** One protocol (or task) with counters or a generated routine, as `agora routines list` shows it. */
export type GeneratedRoutineEntry = {
  kind: 'protocol' | 'task';
  /** The name the CLI accepts first: the generated file's stem, e.g. `unit-conversion-0a1b2c3d`. */
  id: string;
  /** The protocol document's name. */
  protocol: string;
  task?: string;
  hash: string;
  counters: RoutineCounters;
  /** LLM-served share of the uses, 0..1, or null before any use. */
  llmShare: number | null;
  status: RoutineStatusName | 'none';
  record?: RoutineStatus;
  /** The memory prefix of its keys. */
  prefix: string;
};

async function readCounters(memory: AgentMemory, prefix: string): Promise<RoutineCounters> {
  const values = await Promise.all(COUNTER_FIELDS.map((field) => memory.get(`${prefix}/counters/${field}`)));
  const counters = { uses: 0, llm: 0, routine: 0, failures: 0 };
  COUNTER_FIELDS.forEach((field, index) => {
    const value = values[index];
    counters[field] = typeof value === 'number' ? value : 0;
  });
  return counters;
}

/** Every protocol and task with counters or a generated routine in an agent's memory. */
export async function listGeneratedRoutines(memory: AgentMemory): Promise<GeneratedRoutineEntry[]> {
  const prefixes = new Map<string, { kind: 'protocol' | 'task'; hash: string; taskSlug?: string }>();
  for (const key of await memory.keys('routines/')) {
    const match = /^routines\/([0-9a-f]{40})\//.exec(key);
    if (match?.[1]) prefixes.set(`routines/${match[1]}`, { kind: 'protocol', hash: match[1] });
  }
  for (const key of await memory.keys('task-routines/')) {
    const match = /^task-routines\/([A-Za-z0-9._-]+)\/([0-9a-f]{40})\//.exec(key);
    if (match?.[1] && match[2]) prefixes.set(`task-routines/${match[1]}/${match[2]}`, { kind: 'task', hash: match[2], taskSlug: match[1] });
  }
  const entries: GeneratedRoutineEntry[] = [];
  for (const [prefix, found] of prefixes) {
    const [record, meta, counters] = await Promise.all([
      memory.get(`${prefix}/status`) as Promise<RoutineStatus | undefined>,
      memory.get(`${prefix}/meta`) as Promise<{ protocol?: string; task?: string } | undefined>,
      readCounters(memory, prefix),
    ]);
    const protocol = record?.protocol || meta?.protocol || '';
    const task = found.kind === 'task' ? (record?.task ?? meta?.task ?? found.taskSlug ?? '') : undefined;
    const stemFromFile = record?.file ? record.file.replace(/^.*\//, '').replace(/\.ts$/, '') : undefined;
    const id = stemFromFile ?? (found.kind === 'task' ? taskStem(task ?? '', found.hash) : `${routineSlug(protocol || 'protocol')}-${found.hash.slice(0, 8)}`);
    entries.push({
      kind: found.kind,
      id,
      protocol,
      ...(task !== undefined ? { task } : {}),
      hash: found.hash,
      counters,
      llmShare: counters.uses ? Math.min(1, counters.llm / counters.uses) : null,
      status: record?.status ?? 'none',
      ...(record ? { record } : {}),
      prefix,
    });
  }
  return entries.sort((a, b) => a.kind.localeCompare(b.kind) || a.id.localeCompare(b.id));
}

/**
 * The entry a name designates: the generated file's stem or path, the PD's (or task's) name or slug, or a hash
 * prefix of 4+ hex characters. Throws AgoraError('NOT_FOUND') when none or several match.
 */
export async function findGeneratedRoutine(memory: AgentMemory, reference: string): Promise<GeneratedRoutineEntry> {
  const entries = await listGeneratedRoutines(memory);
  const wanted = reference.trim().replace(/^.*\//, '').replace(/\.ts$/, '').toLowerCase();
  const slug = routineSlug(reference);
  const tests: ((entry: GeneratedRoutineEntry) => boolean)[] = [
    (entry) => entry.id.toLowerCase() === wanted,
    (entry) => (entry.kind === 'task' ? [entry.task ?? '', `task-${routineSlug(entry.task ?? '')}`] : [entry.protocol]).some((name) => name.toLowerCase() === reference.trim().toLowerCase() || routineSlug(name) === slug || name === wanted),
    (entry) => /^[0-9a-f]{4,40}$/.test(wanted) && entry.hash.startsWith(wanted),
  ];
  for (const test of tests) {
    const matches = entries.filter(test);
    if (matches.length === 1) return matches[0]!;
    if (matches.length > 1) throw new AgoraError('NOT_FOUND', `"${reference}" matches several routines: ${matches.map((entry) => entry.id).join(', ')}`);
  }
  throw new AgoraError('NOT_FOUND', `no generated routine or protocol matches "${reference}"`);
}

/** Options of {@link reviewGeneratedRoutine}. */
export type ReviewOptions = { dir: string; memory: AgentMemory; reference: string; decision: 'approve' | 'reject'; now?: () => number };

/**
 * Approves or rejects a generated routine (what `agora routines approve|reject` calls). Rejecting deletes nothing:
 * the file stays for reading. A running agent on the same memory picks the change up within a second.
 */
export async function reviewGeneratedRoutine(options: ReviewOptions): Promise<GeneratedRoutineEntry> {
  const entry = await findGeneratedRoutine(options.memory, options.reference);
  const record = entry.record;
  if (!record?.file || record.status === 'generating' || record.status === 'failed') {
    throw new AgoraError('NOT_FOUND', `${entry.id} has no routine to ${options.decision} (status: ${entry.status})`);
  }
  if (options.decision === 'approve') {
    try {
      await stat(resolve(options.dir, record.file));
    } catch {
      throw new AgoraError('NOT_FOUND', `${entry.id}: the file ${record.file} is missing from ${options.dir}`);
    }
  }
  const at = new Date((options.now ?? Date.now)()).toISOString();
  const status: RoutineStatus = { ...record, status: options.decision === 'approve' ? 'approved' : 'rejected', updatedAt: at, reviewedAt: at };
  if (options.decision === 'approve') {
    delete status.reason;
    // A re-enabled routine starts with a clean slate, or its next failure would disable it again at once.
    await options.memory.set(`${entry.prefix}/consecutive-failures`, 0);
  }
  await options.memory.set(`${entry.prefix}/status`, status as unknown as JsonValue);
  return { ...entry, status: status.status, record: status };
}
