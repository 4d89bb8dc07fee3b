import { z } from 'zod';
import { AgoraError, describeError } from '../errors.js';
import type { ProtocolDocument } from '../protocol/document.js';
import type { JsonValue } from '../schemas.js';
import type { Routine, RoutineContext } from './define.js';

/** What the body failed to match, for a peer: field paths and messages, no internals. */
function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => (issue.path.length ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
    .join('; ');
}

/**
 * The PD's own error reply for a malformed body, when its text prescribes one
 * (e.g. `{"error": "Invalid format"}`): the first such reply whose text says "invalid", else none.
 */
export function protocolInvalidInputReply(document: ProtocolDocument): JsonValue | undefined {
  const explicit = document.metadata.invalidInput ?? document.metadata.invalid_input;
  if (explicit !== undefined) return explicit as JsonValue;
  const pattern = /\{\s*"(error|message)"\s*:\s*"([^"\\]{1,200})"\s*\}/g;
  for (const match of document.content.matchAll(pattern)) {
    if (/invalid|malformed|bad (request|input|format)/i.test(match[2]!)) return { [match[1]!]: match[2]! };
  }
  return undefined;
}

/** Converts a routine's reply to a JSON value, refusing what JSON cannot carry. */
function toJson(value: unknown): JsonValue {
  if (value === undefined) return null;
  const text = JSON.stringify(value);
  if (text === undefined) throw new Error('the reply is not JSON-serializable');
  return JSON.parse(text) as JsonValue;
}

/**
 * Runs a routine on a body with its schemas and a time limit. Throws AgoraError('ROUTINE_FAILED') when it
 * throws, times out or returns what its output schema refuses (details are in `cause` for the log), and
 * AgoraError('BAD_REQUEST') when the body fails its input schema and the PD prescribes no error reply.
 */
export async function runRoutine(
  routine: Routine,
  body: JsonValue,
  context: Omit<RoutineContext, 'signal'>,
  document: ProtocolDocument,
  timeoutMs: number,
): Promise<JsonValue> {
  let input: unknown = body;
  if (routine.input) {
    const parsed = routine.input.safeParse(body);
    if (!parsed.success) {
      const reply = routine.invalidInput !== undefined ? toJson(routine.invalidInput) : protocolInvalidInputReply(document);
      if (reply !== undefined) return reply;
      throw new AgoraError('BAD_REQUEST', `body does not follow the protocol "${document.metadata.name}": ${describeIssues(parsed.error)}`);
    }
    input = parsed.data;
  }
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`timed out after ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    const output = await Promise.race([Promise.resolve().then(() => routine.handle(input, { ...context, signal: controller.signal })), timeout]);
    if (routine.output) {
      const parsed = routine.output.safeParse(output);
      if (!parsed.success) throw new Error(`the reply does not match the routine's output schema: ${describeIssues(parsed.error)}`);
      return toJson(parsed.data);
    }
    return toJson(output);
  } catch (error) {
    if (error instanceof AgoraError && error.code !== 'ROUTINE_FAILED') throw error;
    throw new AgoraError('ROUTINE_FAILED', 'Routine failed', { cause: new Error(describeError(error), { cause: error }) });
  } finally {
    clearTimeout(timer);
  }
}
