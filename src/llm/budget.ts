import { AgoraError, FIXED_MESSAGES } from '../errors.js';
import type { JsonValue } from '../schemas.js';

/** Characters one LLM call may carry by default (system prompt, document, history and body): about 50k tokens. */
export const DEFAULT_MAX_LLM_CHARS = 200_000;

/** A message of a conversation as the budget measures it. */
export type BudgetedMessage = { role: 'peer' | 'agent'; body: JsonValue };

/** The characters a body takes in a prompt. */
export function charsOf(body: JsonValue): number {
  return typeof body === 'string' ? body.length : JSON.stringify(body).length;
}

/**
 * Refuses a call over its budget before it is made: `REQUEST_TOO_LARGE` (the peer's turn is too large for this
 * agent's LLM), the sizes in the cause for the log.
 */
export function refuseOverBudget(what: string, chars: number, maxChars: number): void {
  if (chars <= maxChars) return;
  throw new AgoraError('REQUEST_TOO_LARGE', FIXED_MESSAGES.REQUEST_TOO_LARGE, {
    cause: new Error(
      `${what}: the LLM call would carry ${chars} characters, over the budget of ${maxChars}; refused without a call`,
    ),
  });
}

/**
 * The latest messages of a history that fit in `room` characters (by size, not count): older ones are dropped first.
 * @example fitHistory(turn.history, budget - system.length - charsOf(body))
 */
export function fitHistory<T extends BudgetedMessage>(history: readonly T[], room: number): T[] {
  let used = 0;
  let start = history.length;
  while (start > 0) {
    const size = charsOf(history[start - 1]!.body);
    if (used + size > room) break;
    used += size;
    start -= 1;
  }
  return history.slice(start);
}

/**
 * Text from a peer placed inside `<tag>` delimiters: any closing tag it holds is neutralized, so it cannot end the
 * data early and speak as the prompt.
 */
export function delimit(tag: string, text: string): string {
  const closing = new RegExp(`</\\s*${tag}\\s*>`, 'gi');
  return `<${tag}>\n${text.replace(closing, `<\\/${tag}>`)}\n</${tag}>`;
}
