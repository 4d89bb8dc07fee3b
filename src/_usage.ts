// A turn's LLM usage as an agent reports it to its caller: token counts and the model's name, never text. Written as
// the `Agora-Usage` response header (an RFC 8941 dictionary: `input_tokens=12, output_tokens=34, model="gpt-4o"`),
// which a client that does not know it (the Python Agora SDK) ignores; read back by the hub's chain hops.

/** The LLM usage of one turn: tokens summed over its LLM calls, and the model that answered (the last call's). */
export type TurnUsage = { inputTokens: number; outputTokens: number; model?: string };

/** The response header an agent reports a turn's usage in (lower case, as node gives headers). */
export const USAGE_HEADER = 'agora-usage';

/** Token counts above this are not believed (a peer's header is read, never trusted). */
const MAX_TOKENS = 1e12;
/** The longest model name kept. */
const MAX_MODEL_CHARS = 100;
/** The longest header read. */
const MAX_HEADER_CHARS = 300;

/** Adds one LLM call's usage to a turn's. */
export function addUsage(into: TurnUsage, call: { inputTokens: number; outputTokens: number; model?: string }): void {
  into.inputTokens += call.inputTokens;
  into.outputTokens += call.outputTokens;
  if (call.model) into.model = call.model;
}

/** A model name as it may travel: printable ASCII without quotes or backslashes, cut to 100 characters. */
function cleanModel(model: string): string {
  return model.replace(/[^\x20-\x7e]|["\\]/g, '').slice(0, MAX_MODEL_CHARS);
}

/** The `Agora-Usage` header's value for a turn's usage. */
export function formatUsage(usage: TurnUsage): string {
  const model = usage.model === undefined ? '' : cleanModel(usage.model);
  return `input_tokens=${usage.inputTokens}, output_tokens=${usage.outputTokens}${model ? `, model="${model}"` : ''}`;
}

const MEMBER = /^([a-z_]+)=(?:(\d{1,13})|"([\x20-\x21\x23-\x5b\x5d-\x7e]*)")$/;

/**
 * A turn's usage read from an `Agora-Usage` header; undefined when absent or malformed (both token counts are
 * required; unknown members are skipped, so the header can grow).
 */
export function parseUsage(value: string | string[] | null | undefined): TurnUsage | undefined {
  const text = Array.isArray(value) ? value.join(', ') : value;
  if (typeof text !== 'string' || text.length > MAX_HEADER_CHARS) return undefined;
  const fields = new Map<string, string | number>();
  for (const member of text.split(',')) {
    const match = MEMBER.exec(member.trim());
    if (match === null) return undefined;
    const [, key, digits, quoted] = match;
    fields.set(key!, digits !== undefined ? Number(digits) : quoted!);
  }
  const inputTokens = fields.get('input_tokens');
  const outputTokens = fields.get('output_tokens');
  const model = fields.get('model');
  if (typeof inputTokens !== 'number' || typeof outputTokens !== 'number') return undefined;
  if (inputTokens > MAX_TOKENS || outputTokens > MAX_TOKENS) return undefined;
  return { inputTokens, outputTokens, ...(typeof model === 'string' && model ? { model: cleanModel(model) } : {}) };
}
