// The worker thread a generated module runs in (started by ./sandbox.ts): it hardens the globals, imports the
// bundled module as a data: URL, and answers runs; tools are called by message to the main thread. It imports
// nothing a generated module could reach but the contract's check.
import { parentPort } from 'node:worker_threads';
import { hasHandle } from '../routine/handle.js';

type Definition = {
  handle: (body: unknown, context: unknown) => unknown;
  input?: SafeParser;
  output?: SafeParser;
  invalidInput?: unknown;
};
type SafeParser = { safeParse(value: unknown): { success: true; data: unknown } | { success: false; error: unknown } };
type RunContext = { conversation: { id: string | null; turn: number; state: unknown }; protocol: unknown; tools: string[] };
type RunMessage = { type: 'run'; id: number; method: string; payload: unknown; context?: RunContext };
type InboundMessage =
  | { type: 'tool-result'; callId: number; ok: boolean; value?: unknown; error?: string }
  | { type: 'load'; code: string }
  | RunMessage;
type Module = Record<string, unknown> & Partial<Definition>;

if (!parentPort) throw new Error('the sandbox worker runs in a worker thread');
const port = parentPort;
const post = (message: Record<string, unknown>) => port.postMessage(message);
const toBase64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const calls = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
let nextCall = 0;
let routine: Module | ((...args: unknown[]) => unknown) | undefined;

function describe(error: unknown): string {
  const value = error as { message?: unknown; name?: unknown } | null;
  if (value && typeof value === 'object' && typeof value.message === 'string') return (value.name && value.name !== 'Error' ? `${String(value.name)}: ` : '') + value.message;
  return String(error);
}
function issues(error: unknown): string {
  const found = (error as { issues?: unknown } | null)?.issues;
  const list = error && Array.isArray(found) ? (found as { path?: unknown[]; message: string }[]) : [];
  return list.slice(0, 5).map((issue) => (issue.path && issue.path.length ? `${issue.path.join('.')}: ` : '') + issue.message).join('; ') || describe(error);
}
function toJson(value: unknown, what: string): unknown {
  if (value === undefined) return null;
  const text = JSON.stringify(value);
  if (text === undefined) throw new Error(`${what} is not JSON`);
  return JSON.parse(text);
}
function harden(): void {
  for (const key of Object.keys(process.env)) delete process.env[key];
  const globals = globalThis as Record<string, unknown>;
  for (const name of ['fetch', 'WebSocket', 'XMLHttpRequest', 'EventSource', 'BroadcastChannel', 'Worker']) {
    try { delete globals[name]; } catch {}
    try { if (name in globalThis) globals[name] = undefined; } catch {}
  }
  for (const name of ['binding', '_linkedBinding', 'dlopen', 'getBuiltinModule', 'kill', 'chdir', 'setuid', 'setgid', 'seteuid', 'setegid', 'setgroups', 'initgroups']) {
    const blocked = () => { throw new Error(`process.${name} is not available to generated routines`); };
    try { Object.defineProperty(process, name, { value: blocked, writable: false, configurable: false }); } catch {}
  }
}
function callTool(runId: number, name: string, input: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const callId = ++nextCall;
    calls.set(callId, { resolve, reject });
    try {
      post({ type: 'tool', runId, callId, name, input: toJson(input, `the input of tool ${name}`) });
    } catch (error) {
      calls.delete(callId);
      reject(error as Error);
    }
  });
}
async function handle(id: number, body: unknown, context: RunContext): Promise<Record<string, unknown>> {
  const definition = typeof routine === 'function' ? { handle: routine } : routine;
  if (!hasHandle(definition)) throw new Error('the default export must be defineRoutine({ handle })');
  const { input: inputSchema, output: outputSchema, invalidInput } = definition as Definition;
  const log = (level: string) => (message: unknown) => post({ type: 'log', runId: id, level, message: String(message) });
  const conversation = { id: context.conversation.id, turn: context.conversation.turn, state: context.conversation.state };
  const tools = Object.freeze(Object.fromEntries(context.tools.map((name) => [name, (input: unknown) => callTool(id, name, input)])));
  const logger = Object.freeze({ info: log('info'), warn: log('warn'), error: log('error'), debug: log('info') });
  let input = body;
  if (inputSchema) {
    const parsed = inputSchema.safeParse(body);
    if (!parsed.success) {
      return { value: null, invalid: { issues: issues(parsed.error), ...(invalidInput !== undefined ? { reply: toJson(invalidInput, 'invalidInput') } : {}) } };
    }
    input = parsed.data;
  }
  let output = await (definition as Definition).handle(input, { conversation, protocol: context.protocol, logger, tools, signal: new AbortController().signal });
  if (outputSchema) {
    const parsed = outputSchema.safeParse(output);
    if (!parsed.success) throw new Error(`the reply does not match the routine's output schema: ${issues(parsed.error)}`);
    output = parsed.data;
  }
  return { value: toJson(output, 'the reply'), state: toJson(conversation.state, 'the conversation state') };
}
async function run(message: RunMessage): Promise<Record<string, unknown>> {
  if (!routine) throw new Error('no module is loaded');
  const { id, method, payload } = message;
  if (method === 'handle') return handle(id, payload, message.context as RunContext);
  const module = routine as Module;
  if (method === 'checkOutput') {
    if (!module.output) return { value: null };
    const parsed = module.output.safeParse(payload);
    return { value: parsed.success ? null : issues(parsed.error) };
  }
  if (method === 'buildBody' || method === 'parseReply') {
    const fn = module[method];
    if (typeof fn !== 'function') throw new Error(`the default export has no ${method} function`);
    return { value: toJson(await (fn as (value: unknown) => unknown).call(module, payload), `the result of ${method}`) };
  }
  throw new Error(`unknown method ${method}`);
}
port.on('message', (message: InboundMessage) => {
  if (message.type === 'tool-result') {
    const call = calls.get(message.callId);
    if (!call) return;
    calls.delete(message.callId);
    if (message.ok) call.resolve(message.value);
    else call.reject(new Error(message.error));
  } else if (message.type === 'load') {
    harden();
    import(`data:text/javascript;base64,${toBase64(message.code)}`).then(
      (module: { default?: unknown }) => {
        routine = module.default as typeof routine;
        if (routine === undefined || routine === null) post({ type: 'load-failed', error: 'the module has no default export' });
        else post({ type: 'loaded' });
      },
      (error: unknown) => post({ type: 'load-failed', error: describe(error) }),
    );
  } else if (message.type === 'run') {
    run(message).then(
      (result) => post({ type: 'result', id: message.id, ok: true, ...result }),
      (error: unknown) => post({ type: 'result', id: message.id, ok: false, error: describe(error) }),
    );
  }
});
