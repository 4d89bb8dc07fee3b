import { z } from 'zod';
import { AgoraError } from '../errors.js';
import { compiledSchema } from '../schemas.js';
import type { DefineTool, Tool, ToolContext } from './contract.js';

export type { DefineTool, Tool, ToolContext } from './contract.js';

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Defines a tool: a name, what it does, a zod schema of its input, and the function that runs it.
 * @example
 * export default defineTool({
 *   name: 'get_forecast', description: 'Forecast for a city on a date',
 *   input: z.object({ city: z.string(), date: z.string() }),
 *   run: ({ city, date }) => lookup(city, date),
 * });
 */
export function defineTool<Schema extends z.ZodType, Output>(definition: {
  name: string;
  description: string;
  input: Schema;
  run(input: z.output<Schema>, context: ToolContext): Output | Promise<Output>;
}): Tool<z.output<Schema>, Output> {
  if (!TOOL_NAME.test(definition.name)) {
    throw new AgoraError(
      'INVALID_ARGUMENT',
      `Invalid tool name ${JSON.stringify(definition.name)}: use 1-64 letters, digits, _ or -`,
    );
  }
  return Object.freeze({ ...definition, [TOOL_MARK]: true, [INPUT_PARSER]: compiledSchema(definition.input) }) as Tool<
    z.output<Schema>,
    Output
  >;
}
// The contract's signature (what hand-written tools are type-checked against) is this one: a drift fails the build.
defineTool satisfies DefineTool;

const TOOL_MARK = Symbol.for('agora-agents.tool');
// The input schema compiled once (see compiledSchema); a tool made without defineTool is checked with its own schema.
const INPUT_PARSER = Symbol.for('agora-agents.toolInputParser');

/** Whether a value looks like a tool (from `defineTool`, or a plain object of the same shape). */
export function isTool(value: unknown): value is Tool {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<Tool>;
  return (
    typeof candidate.name === 'string' && typeof candidate.run === 'function' && typeof candidate.input === 'object'
  );
}

// The input's own JSON Schema, or undefined when zod cannot express it.
function inputSchemaOf(tool: Tool): Record<string, unknown> | undefined {
  try {
    const schema = z.toJSONSchema(tool.input, { unrepresentable: 'any', io: 'input' }) as Record<string, unknown>;
    delete schema.$schema;
    return schema;
  } catch {
    return undefined;
  }
}

/** The JSON Schema of a tool's input, for the LLM (which only calls tools with an object: other inputs go as `{ value }`). */
export function toolInputJsonSchema(tool: Tool): Record<string, unknown> {
  const schema = inputSchemaOf(tool);
  if (!schema) return { type: 'object' };
  if (schema.type !== 'object') return { type: 'object', properties: { value: schema }, required: ['value'] };
  return schema;
}

/** Runs a tool on untrusted input (from an LLM or a routine): validates, runs, returns its output. */
export function callTool(tool: Tool, input: unknown, context: ToolContext = {}): Promise<unknown> {
  // Not an async function: a routine's tool call is on the hot path, and the tool's own promise (or value) needs no
  // second one around it. A throw still becomes a rejection.
  try {
    return Promise.resolve(runChecked(tool, input, context));
  } catch (error) {
    return Promise.reject(error);
  }
}

/** The mark of a toolbox function's promise-free form (see {@link toolFunction}). */
export const RUN_NOW = Symbol('agora-agents.toolRunNow');

/** A tool as a routine calls it; it may carry, under {@link RUN_NOW}, the same call without a promise around it. */
export type ToolFunction = ((input: unknown) => Promise<unknown>) & {
  readonly [RUN_NOW]?: (input: unknown) => unknown;
};

/**
 * A tool as routines call it: `(input) => Promise<output>`, carrying under {@link RUN_NOW} the same call that gives
 * the tool's own answer: its value when `run` answers synchronously (and throws what it throws), else its promise.
 * The QuickJS sandbox answers a synchronous tool within the guest's call, without a round trip through promises.
 */
export function toolFunction(tool: Tool, context: ToolContext = {}): ToolFunction {
  const call = (input: unknown) => callTool(tool, input, context);
  return Object.assign(call, { [RUN_NOW]: (input: unknown) => runChecked(tool, input, context) });
}

function runChecked(tool: Tool, input: unknown, context: ToolContext): unknown {
  let parsed = ((tool as Tool & { [INPUT_PARSER]?: z.ZodType })[INPUT_PARSER] ?? tool.input).safeParse(input);
  // An LLM calls a tool whose input is not an object with `{ value }`, as toolInputJsonSchema offered it.
  if (!parsed.success && isValueWrapper(input) && offeredAsValue(tool)) {
    const unwrapped = tool.input.safeParse(input.value);
    if (unwrapped.success) parsed = unwrapped;
  }
  if (!parsed.success)
    throw new AgoraError('INVALID_ARGUMENT', `Invalid input for tool ${tool.name}: ${z.prettifyError(parsed.error)}`);
  return tool.run(parsed.data, context);
}

function offeredAsValue(tool: Tool): boolean {
  const schema = inputSchemaOf(tool);
  return schema !== undefined && schema.type !== 'object';
}

function isValueWrapper(input: unknown): input is { value: unknown } {
  return (
    typeof input === 'object' &&
    input !== null &&
    !Array.isArray(input) &&
    Object.keys(input).length === 1 &&
    'value' in input
  );
}
