// How the QuickJS sandbox (./quickjs.ts) runs a guest's tool request on the host: the tool from the call's context,
// its answer as the text the guest's `settle` takes ("+<callId>:<JSON>" or "-<callId>:<error>").
import { describeError } from '../../errors.js';
import { isThenable } from '../../routine/run.js';
import { RUN_NOW, type ToolFunction } from '../../tool/define.js';
import type { SandboxContext } from './quickjs-types.js';

/**
 * Runs the tool `name` on `input`. Returns the answer's text when the tool gave it at once (its RUN_NOW form, see
 * toolFunction) or failed at once; else returns undefined and hands the text to `later` once the tool's promise
 * settles.
 */
export function answerTool(
  tools: SandboxContext['tools'],
  name: string | undefined,
  callId: string,
  input: unknown,
  later: (text: string) => void,
): string | undefined {
  if (name === undefined || !Object.hasOwn(tools, name)) return `-${callId}:no tool named "${name}"`;
  const tool = tools[name]!;
  let output: unknown;
  try {
    const now = (tool as ToolFunction)[RUN_NOW];
    output = now ? now(input) : tool(input);
  } catch (error) {
    return `-${callId}:${errorMessage(error)}`;
  }
  if (!isThenable(output)) return answerText(callId, output);
  // One reaction to the tool's promise, not a chain of them.
  Promise.resolve(output).then(
    (value) => later(answerText(callId, value)),
    (error: unknown) => later(`-${callId}:${errorMessage(error)}`),
  );
  return undefined;
}

/** The text of a tool's answer, or of its failure when the answer is not JSON. */
function answerText(callId: string, value: unknown): string {
  try {
    return `+${callId}:${JSON.stringify(value === undefined ? null : value) ?? 'null'}`;
  } catch (error) {
    return `-${callId}:the tool's answer is not JSON: ${describeError(error)}`;
  }
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : describeError(error);
}
