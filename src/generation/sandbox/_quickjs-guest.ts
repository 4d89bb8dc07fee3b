// The script every QuickJS context runs before the generated module: it returns the functions the host calls:
// `load` (take the module's default export), `run` (one call), `settle` (a tool's answer) and `flush` (what the
// guest has to say after the host ran its pending jobs). The guest has no host function at all: what it says (a
// call's end, a tool request, a log line) is queued in the prelude's closure and handed back as the return value of
// the next host call. A host function costs ~36 µs a crossing in quickjs-emscripten; a return value almost nothing.
import type { JsonObject, JsonValue } from '../../schemas.js';
import type { SandboxContext, SandboxMethod } from './quickjs-types.js';
import { MODULE_GLOBAL } from './quickjs-bundle.js';
import type { SandboxResult } from './quickjs-types.js';

/** JSON text parsed, or undefined when it is not JSON. */
export function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** What an instance remembers of the protocol and tool names last handed to its guest (see `run` in the prelude). */
export type GuestStatics = {
  statics: string | undefined;
  /** The tool names in `statics`: a guest's tool request names its tool by its index here. */
  toolNames: readonly string[];
  /** The hash and toolbox `statics` was made from. */
  staticsHash?: string;
  staticsTools?: object;
};

/**
 * The text of a call into the guest's `run`: `[id, method, payload, conversation?, statics?]`. The protocol and the
 * tool names rarely change between calls: sent again only when they do (remembered on the instance). A document is
 * named by the hash of its text (its metadata with it), and the toolbox object changes when the tools do.
 */
export function callText(
  instance: GuestStatics,
  id: number,
  method: SandboxMethod,
  payload: unknown,
  context: SandboxContext | undefined,
): string {
  let text = `[${id},"${method}",${JSON.stringify(payload ?? null)}`;
  if (context) {
    const { conversation, protocol } = context;
    // A single-round query's conversation is always the same text.
    text +=
      conversation.id === null && conversation.turn === 1 && isEmpty(conversation.state)
        ? SINGLE_ROUND
        : `,${JSON.stringify({ id: conversation.id, turn: conversation.turn, state: conversation.state })}`;
    if (protocol.hash !== instance.staticsHash || context.tools !== instance.staticsTools) {
      const toolNames = Object.keys(context.tools);
      const statics = JSON.stringify({
        protocol: { name: protocol.name, hash: protocol.hash, metadata: protocol.metadata },
        tools: toolNames,
      });
      if (statics !== instance.statics) text += `,${statics}`;
      Object.assign(instance, { statics, toolNames, staticsHash: protocol.hash, staticsTools: context.tools });
    }
  }
  return `${text}]`;
}

const SINGLE_ROUND = ',{"id":null,"turn":1,"state":{}}';

function isEmpty(object: object): boolean {
  for (const key in object) if (Object.hasOwn(object, key)) return false;
  return true;
}

/**
 * A tool request from the outbox, "<runId>:<callId>:<tool index>:<input JSON>" (the index into the tool names last
 * sent).
 */
export function toolRequestOf(
  request: string,
): { runId: number; callId: string; index: number; input: unknown } | undefined {
  const first = request.indexOf(':');
  const second = request.indexOf(':', first + 1);
  const third = request.indexOf(':', second + 1);
  if (first < 0 || second < 0 || third < 0) return undefined;
  return {
    runId: Number(request.slice(0, first)),
    callId: request.slice(first + 1, second),
    index: Number(request.slice(second + 1, third)),
    input: safeJson(request.slice(third + 1)),
  };
}

/** A log line from the outbox, '[runId, level, message]', its level one a logger has. */
export function logLineOf(
  line: string,
): { runId: unknown; level: 'info' | 'warn' | 'error'; message: string } | undefined {
  const [runId, level, message] = (safeJson(line) ?? []) as [unknown, unknown, unknown];
  if (typeof message !== 'string') return undefined;
  return { runId, level: level === 'warn' || level === 'error' ? level : 'info', message };
}

/**
 * What the guest reports at the end of a call, checked by hand (a schema library's parse cost more than the rest of
 * the host's share of a call): `{ value, state?, invalid?: { issues, reply? } }`, or why it is malformed. Its values
 * came out of JSON.parse, so they are JSON by construction; only the shape needs checking.
 */
export function sandboxResult(report: unknown): SandboxResult | string {
  if (!isObject(report)) return 'not an object';
  const { value, state, invalid } = report;
  const result: SandboxResult = { value: value as JsonValue };
  if (state !== undefined) {
    if (!isObject(state)) return 'state: not an object';
    result.state = state as JsonObject;
  }
  if (invalid !== undefined) {
    if (!isObject(invalid) || typeof invalid.issues !== 'string') return 'invalid: not { issues: string }';
    result.invalid =
      invalid.reply === undefined
        ? { issues: invalid.issues }
        : { issues: invalid.issues, reply: invalid.reply as JsonValue };
  }
  return result;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The bundle wrapped in a function, so its `var` stays local; the completion value is the module's exports. */
export function wrapBundle(bundle: string): string {
  return `(function () {\n${bundle}\nreturn ${MODULE_GLOBAL};\n})()`;
}

/**
 * The prelude's source; its completion value is `{ load, run, settle, flush }`. `run` takes
 * `[runId, method, payload, conversation, statics?]` as JSON (statics, `{ protocol, tools }`, only when they changed
 * since the last call) and `settle` a tool's answer, `"+<callId>:<JSON>"` or `"-<callId>:<error>"`. `run`, `settle`
 * and `flush` return the guest's outbox, its messages separated by newlines (an empty string when it is empty):
 * `D+<runId>:<result JSON>` or `D-<runId>:<error as a JSON string>` (the end of a call), `T<runId>:<callId>:<tool
 * index>:<input JSON>` (a tool request; the index is the tool's place in the names last sent), `L<JSON [runId,
 * level, message]>` (a log line). Plain string slicing, no regular expressions.
 *
 * Written for QuickJS's interpreter, where every closure, promise and JSON.stringify call is measurable (a closure
 * ~0.4 µs, a promise reaction ~4 µs, a stringify ~2 µs of fixed cost): a call makes as few of them as it can.
 */
export const GUEST_PRELUDE = `(() => {
  'use strict';
  const parse = JSON.parse, stringify = JSON.stringify, freeze = Object.freeze;
  // A string, not an array: nothing the module does to Array.prototype reaches it. Each message is built from JSON
  // text and fixed characters only, so it holds no newline, the separator.
  let outbox = '';
  const send = (message) => { outbox = outbox ? outbox + '\\n' + message : message; };
  function flush() {
    const text = outbox;
    outbox = '';
    return text;
  }
  // The end of a call, as its JSON text or its error.
  const succeed = (runId, result) => send('D+' + runId + ':' + result);
  const fail = (runId, error) => send('D-' + runId + ':' + stringify(describe(error)));
  const calls = new Map();
  let nextCall = 0;
  // The module's default export, as a routine definition ({ handle, input?, output?, … }) and as exported.
  let definition, routine;
  // The protocol as text (each call that reads it gets its own copy), as last sent by the host.
  let protocolText = 'null';
  // The call whose entry is running. The host runs calls one at a time, so a tool request or a log line made now
  // is this call's (a continuation a routine kept from an earlier call acts for the live one, as its own code could).
  let liveRun;

  function describe(error) {
    if (error && typeof error === 'object' && typeof error.message === 'string') {
      return (typeof error.name === 'string' && error.name !== 'Error' ? error.name + ': ' : '') + error.message;
    }
    return String(error);
  }
  function issues(error) {
    const list = error && Array.isArray(error.issues) ? error.issues : [];
    return list.slice(0, 5).map((issue) => (issue.path && issue.path.length ? issue.path.join('.') + ': ' : '') + issue.message).join('; ') || describe(error);
  }
  function jsonText(value, what) {
    if (value === undefined) return 'null';
    const text = stringify(value);
    if (text === undefined) throw new Error(what + ' is not JSON');
    return text;
  }
  function callTool(index, input) {
    return new Promise((resolve, reject) => {
      // The input alone, not [name, input]: a stringify's cost grows with what it walks. What JSON cannot hold at
      // the top (a function, undefined) is sent as null, as it was inside an array.
      const text = stringify(input);
      const callId = ++nextCall;
      calls.set(callId, { resolve, reject });
      send('T' + liveRun + ':' + callId + ':' + index + ':' + (text === undefined ? 'null' : text));
    });
  }
  function settle(text) {
    const mark = text.indexOf(':');
    const callId = Number(text.slice(1, mark));
    const call = calls.get(callId);
    if (!call) return;
    calls.delete(callId);
    if (text[0] === '+') call.resolve(parse(text.slice(mark + 1)));
    else call.reject(new Error(text.slice(mark + 1)));
  }
  function load(module) {
    routine = module && module.default;
    if (routine === undefined || routine === null) throw new Error('the module has no default export');
    definition = typeof routine === 'function' ? { handle: routine } : routine;
  }
  const signal = freeze({ aborted: false, reason: undefined, throwIfAborted() {}, addEventListener() {}, removeEventListener() {}, onabort: null });
  // The tools and the logger, shared by every call: made per call, with a closure each, they cost the interpreter
  // more than a simple routine's own work. The tools are remade when the host sends other names.
  let tools = freeze({});
  function toolsFor(names) {
    const made = {};
    // By index: for…of goes through the iterator protocol, several times slower in the interpreter.
    for (let index = 0; index < names.length; index++) made[names[index]] = (input) => callTool(index, input);
    return freeze(made);
  }
  const log = (level) => (message) => send('L' + stringify([liveRun, level, String(message)]));
  const logger = freeze({ info: log('info'), warn: log('warn'), error: log('error'), debug: log('info') });
  // The routine context. The protocol is parsed only if the routine reads it (its own copy each call, as a
  // hand-written routine gets): an accessor pair in the literal, the cheapest lazy property in the interpreter.
  function routineContext(conversation) {
    let protocol;
    return {
      conversation,
      signal,
      get protocol() { return protocol === undefined ? (protocol = parse(protocolText)) : protocol; },
      set protocol(value) { protocol = value; },
      tools,
      logger,
    };
  }
  // What a method makes of its result, the JSON text of the call's report: handled takes the conversation with it
  // (its state only when it has an id: a single-round query's state is kept nowhere, and a stringify is the
  // interpreter's dearest step), built the method's name.
  function handled(output, conversation) {
    if (definition.output) {
      const parsed = definition.output.safeParse(output);
      if (!parsed.success) throw new Error("the reply does not match the routine's output schema: " + issues(parsed.error));
      output = parsed.data;
    }
    const value = jsonText(output, 'the reply');
    if (conversation.id === null) return '{"value":' + value + '}';
    return '{"value":' + value + ',"state":' + jsonText(conversation.state, 'the conversation state') + '}';
  }
  const built = (value, method) => '{"value":' + jsonText(value, 'the result of ' + method) + '}';
  // A result now, or later: the end of the call is reported from the promise's own reaction, one job fewer than
  // chaining a second then, and no closure but the reaction's own two.
  function finish(runId, output, report, context) {
    if (!output || typeof output.then !== 'function') return succeed(runId, report(output, context));
    Promise.resolve(output).then((value) => {
      let text;
      try {
        text = report(value, context);
      } catch (error) {
        fail(runId, error);
        return;
      }
      succeed(runId, text);
    }, (error) => fail(runId, error));
  }
  function handle(runId, body, conversation) {
    if (!definition || typeof definition.handle !== 'function') throw new Error('the default export must be defineRoutine({ handle })');
    let input = body;
    if (definition.input) {
      const parsed = definition.input.safeParse(body);
      if (!parsed.success) {
        const reply = definition.invalidInput !== undefined ? ',"reply":' + jsonText(definition.invalidInput, 'invalidInput') : '';
        return succeed(runId, '{"value":null,"invalid":{"issues":' + stringify(issues(parsed.error)) + reply + '}}');
      }
      input = parsed.data;
    }
    // A routine that answers synchronously is finished without a trip through the job queue.
    finish(runId, definition.handle(input, routineContext(conversation)), handled, conversation);
  }
  // Reports the call's result, a JSON text, now or later; throws, or reports a failure, when it fails.
  function dispatch(runId, method, payload, conversation) {
    if (!routine) throw new Error('no module is loaded');
    if (method === 'handle') return handle(runId, payload, conversation);
    if (method === 'checkOutput') {
      if (!routine.output) return succeed(runId, '{"value":null}');
      const parsed = routine.output.safeParse(payload);
      return succeed(runId, '{"value":' + (parsed.success ? 'null' : stringify(issues(parsed.error))) + '}');
    }
    if (method === 'buildBody' || method === 'parseReply') {
      if (typeof routine[method] !== 'function') throw new Error('the default export has no ' + method + ' function');
      return finish(runId, routine[method](payload), built, method);
    }
    throw new Error('unknown method ' + method);
  }
  function run(text) {
    // By index: destructuring goes through the iterator protocol, several times slower in the interpreter.
    const envelope = parse(text);
    const runId = envelope[0], statics = envelope[4];
    liveRun = runId;
    if (statics) {
      protocolText = stringify(statics.protocol);
      tools = toolsFor(statics.tools);
    }
    try {
      dispatch(runId, envelope[1], envelope[2], envelope[3]);
    } catch (error) {
      fail(runId, error);
    }
  }
  return { load, run: (text) => { run(text); return flush(); }, settle: (text) => { settle(text); return flush(); }, flush };
})()`;
