// The script every QuickJS context runs before the generated module: it takes the three host functions off the
// global object (so the module cannot call them directly), and returns the functions the host calls: `load`
// (take the module's default export), `run` (one call) and `settle` (a tool's answer). Plain JavaScript, run
// inside QuickJS: everything crosses the boundary as JSON text, numbers and booleans.
import { MODULE_GLOBAL } from './quickjs-bundle.js';

/** The bundle wrapped in a function, so its `var` stays local; the completion value is the module's exports. */
export function wrapBundle(bundle: string): string {
  return `(function () {\n${bundle}\nreturn ${MODULE_GLOBAL};\n})()`;
}

/** The global the host functions are installed on before the prelude runs (and deleted from by it). */
export const HOST_GLOBAL = '__agora_host';

/** The prelude's source; its completion value is `{ load, run, settle }`. */
export const GUEST_PRELUDE = `(() => {
  'use strict';
  const host = globalThis.${HOST_GLOBAL};
  delete globalThis.${HOST_GLOBAL};
  const hostTool = host.tool, hostDone = host.done, hostLog = host.log;
  const parse = JSON.parse, stringify = JSON.stringify, freeze = Object.freeze, fromEntries = Object.fromEntries;
  const calls = new Map();
  let nextCall = 0;
  let routine;

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
  function toJson(value, what) {
    if (value === undefined) return null;
    const text = stringify(value);
    if (text === undefined) throw new Error(what + ' is not JSON');
    return parse(text);
  }
  function jsonText(value, what) {
    if (value === undefined) return 'null';
    const text = stringify(value);
    if (text === undefined) throw new Error(what + ' is not JSON');
    return text;
  }
  function callTool(runId, name, input) {
    return new Promise((resolve, reject) => {
      const text = stringify(input === undefined ? null : input);
      if (text === undefined) throw new Error('the input of tool ' + name + ' is not JSON');
      const callId = ++nextCall;
      calls.set(callId, { resolve, reject });
      hostTool(runId, callId, name, text);
    });
  }
  function settle(callId, ok, text) {
    const call = calls.get(callId);
    if (!call) return;
    calls.delete(callId);
    if (ok) call.resolve(parse(text));
    else call.reject(new Error(text));
  }
  function load(module) {
    routine = module && module.default;
    if (routine === undefined || routine === null) throw new Error('the module has no default export');
  }
  const signal = freeze({ aborted: false, reason: undefined, throwIfAborted() {}, addEventListener() {}, removeEventListener() {}, onabort: null });
  async function handle(runId, body, context) {
    const definition = typeof routine === 'function' ? { handle: routine } : routine;
    if (!definition || typeof definition.handle !== 'function') throw new Error('the default export must be defineRoutine({ handle })');
    const log = (level) => (message) => hostLog(runId, level, String(message));
    const conversation = { id: context.conversation.id, turn: context.conversation.turn, state: context.conversation.state };
    const tools = freeze(fromEntries(context.tools.map((name) => [name, (input) => callTool(runId, name, input)])));
    const logger = freeze({ info: log('info'), warn: log('warn'), error: log('error'), debug: log('info') });
    let input = body;
    if (definition.input) {
      const parsed = definition.input.safeParse(body);
      if (!parsed.success) {
        return { value: null, invalid: { issues: issues(parsed.error), ...(definition.invalidInput !== undefined ? { reply: toJson(definition.invalidInput, 'invalidInput') } : {}) } };
      }
      input = parsed.data;
    }
    let output = await definition.handle(input, { conversation, protocol: context.protocol, logger, tools, signal });
    if (definition.output) {
      const parsed = definition.output.safeParse(output);
      if (!parsed.success) throw new Error("the reply does not match the routine's output schema: " + issues(parsed.error));
      output = parsed.data;
    }
    // Returned as JSON text, built once: the host parses it and checks its shape.
    return { text: '{"value":' + jsonText(output, 'the reply') + ',"state":' + jsonText(conversation.state, 'the conversation state') + '}' };
  }
  async function dispatch(runId, method, payload, context) {
    if (!routine) throw new Error('no module is loaded');
    if (method === 'handle') return handle(runId, payload, context);
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
  function run(runId, method, payloadText, contextText) {
    const fail = (error) => hostDone(runId, false, describe(error));
    let promise;
    try {
      promise = dispatch(runId, method, parse(payloadText), contextText ? parse(contextText) : undefined);
    } catch (error) {
      fail(error);
      return;
    }
    promise.then((result) => {
      let text;
      try { text = typeof result.text === 'string' ? result.text : stringify(result); } catch (error) { fail(error); return; }
      hostDone(runId, true, text);
    }, fail);
  }
  return { load, run, settle };
})()`;
