// How bodies travel to and from a Python SDK 0.2.0 peer (spec §7): its sender always sends text, and its receivers
// (toolformers and routines alike) read a protocol query's body as text, failing on a JSON object
// (`unhashable type: 'slice'`); they answer with text too, JSON text when the protocol prescribes JSON.
import type { JsonValue } from '../schemas.js';

/** A body as a Python-like peer reads it under a protocol: a string as it is, any other JSON value as its JSON text. */
export function textBody(body: JsonValue): string {
  return typeof body === 'string' ? body : JSON.stringify(body);
}

/**
 * A Python-like peer's reply under a protocol, read back: the JSON text of an object or an array becomes that value,
 * (fenced or not) so typed outputs and routines see what the protocol prescribes; other text (`42`, `sunny`) stays
 * text.
 */
export function parsedReply(body: JsonValue): JsonValue {
  if (typeof body !== 'string') return body;
  // An LLM behind the peer may fence its JSON (```json … ```): the fence is no part of the value.
  const text = body
    .trim()
    .replace(/^```(?:json)?\s*\n([\s\S]*?)\n?```$/, '$1')
    .trim();
  if (!/^[[{]/.test(text)) return body;
  try {
    // JSON.parse yields JSON values only; the shape is judged later, by the task's output schema or the caller.
    return JSON.parse(text) as JsonValue;
  } catch {
    return body;
  }
}
