// What the fake reads from a Messages API request: the checks the real API makes first, the credential, the texts
// tests match on, and the character counts of the `chars` token model.
import type { IncomingMessage } from 'node:http';
import { bearerToken } from '../edge/guard.js';
import type { ResponseBlock } from './_fake-stream.js';

/** The first check the real API makes that a request fails (model, max_tokens, messages), as its message. */
export function invalidRequest(body: any): string | undefined {
  if (typeof body?.model !== 'string' || !body.model) return 'model: Field required';
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return 'max_tokens: Field required';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: at least one message is required';
  return undefined;
}

/** The API key or bearer token a request carries: recorded, never required (tests check that one was sent; the fake accepts any). */
export function credential(request: IncomingMessage): string | undefined {
  const key = request.headers['x-api-key'];
  if (typeof key === 'string' && key) return key;
  return bearerToken(request.headers.authorization);
}

/** Tokens of `chars` characters in the `chars` token model: a quarter, rounded up. */
export function quarter(chars: number): number {
  return Math.ceil(chars / 4);
}

/** The system prompt's text, however it was sent (a string or text blocks). */
export function systemText(system: unknown): string {
  if (typeof system === 'string') return system;
  if (Array.isArray(system))
    return system.map((block) => (typeof block?.text === 'string' ? block.text : '')).join('\n');
  return '';
}

// The text a block carries: text, a tool result's content, or a tool call's input as JSON.
function blockText(block: any): string {
  if (typeof block === 'string') return block;
  if (block?.type === 'text' && typeof block.text === 'string') return block.text;
  if (block?.type === 'tool_result')
    return Array.isArray(block.content) ? block.content.map(blockText).join('\n') : String(block.content ?? '');
  if (block?.type === 'tool_use') return JSON.stringify(block.input ?? {});
  return '';
}

function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map(blockText).filter(Boolean).join('\n');
  return '';
}

/** The text of the last user message: its text blocks and tool results. */
export function lastUserText(messages: unknown): string {
  if (!Array.isArray(messages)) return '';
  const last = messages.findLast((message) => message?.role === 'user');
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  if (!Array.isArray(last.content)) return '';
  return last.content
    .filter((block: any) => block?.type === 'text' || block?.type === 'tool_result')
    .map(blockText)
    .join('\n');
}

/** The characters a request sends: its system prompt and every message's text. */
export function requestChars(body: any): number {
  const messages: unknown[] = Array.isArray(body?.messages) ? body.messages : [];
  return (
    systemText(body?.system).length +
    messages.reduce<number>((sum, message: any) => sum + messageText(message?.content).length, 0)
  );
}

/** The characters a reply carries: text, and tool calls' inputs as JSON. */
export function replyChars(content: ResponseBlock[]): number {
  return content.reduce(
    (sum, block) => sum + (block.type === 'text' ? block.text.length : JSON.stringify(block.input).length),
    0,
  );
}
