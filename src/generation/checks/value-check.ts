// Whether a generated routine is right, not just well-shaped (issue 11, item 2): on the check queries the LLM wrote
// from the protocol, the module's replies are compared with the LLM responder's reference answers. Each query is
// asked of the responder twice: where both answers agree the reply is deterministic and the module must give the
// same value; where they differ (an id, a clock, a free-text field) only the shape is compared. A routine that
// matches the recorded examples but is wrong on a new input is refused here.
import type { JsonObject, JsonValue } from '../../schemas.js';

/** A check query with the LLM responder's two answers to it (asked separately, each from a fresh conversation). */
export type ValueProbe = { body: JsonValue; answers: readonly [JsonValue, JsonValue] };

/** What the module did with a probe's body: its reply, or why it failed. */
export type ProbeOutcome = { reply: JsonValue } | { error: string };

/** The verdict on a set of probes: readable mismatch lines (empty when the module passes) and counts. */
export type ValueCheckReport = { mismatches: string[]; byValue: number; byShape: number };

/**
 * Asks the LLM responder each body twice and keeps the probes answered both times; a body whose answers failed is
 * left out and reported through `onSkip`. `answer` is the responder (e.g. answerUnderProtocol with no history).
 */
export async function askTwice(
  bodies: readonly JsonValue[],
  answer: (body: JsonValue) => Promise<JsonValue>,
  onSkip?: (body: JsonValue, error: unknown) => void,
): Promise<ValueProbe[]> {
  const probes: ValueProbe[] = [];
  for (const body of bodies) {
    try {
      const first = await answer(body);
      const second = await answer(body);
      probes.push({ body, answers: [first, second] });
    } catch (error) {
      onSkip?.(body, error);
    }
  }
  return probes;
}

/**
 * Compares the module's outcome on each probe (same order) with the reference answers: by value where the two
 * answers agree, by shape (JSON type, and the keys of an object) where they differ. Text replies are compared with
 * their white space collapsed. Returns one line per mismatch, naming the query, the body and both replies.
 */
export function checkProbeValues(probes: readonly ValueProbe[], outcomes: readonly ProbeOutcome[]): ValueCheckReport {
  if (outcomes.length !== probes.length) throw new Error(`${probes.length} probes but ${outcomes.length} outcomes`);
  const report: ValueCheckReport = { mismatches: [], byValue: 0, byShape: 0 };
  probes.forEach((probe, index) => {
    const label = `test query ${index + 1}: body ${preview(probe.body)}`;
    const outcome = outcomes[index]!;
    if ('error' in outcome) {
      report.mismatches.push(`${label}: the routine failed: ${outcome.error}`);
      return;
    }
    const [first, second] = probe.answers;
    if (matches(first, second) && matches(second, first)) {
      if (matches(outcome.reply, first)) report.byValue++;
      else
        report.mismatches.push(
          `${label}: the routine replied ${preview(outcome.reply)} but the LLM answered ${preview(first)} both times it was asked`,
        );
      return;
    }
    const mismatch = shapeMismatch(outcome.reply, first);
    if (mismatch)
      report.mismatches.push(
        `${label}: ${mismatch} (the LLM's answers differ between two asks, so only the shape is compared)`,
      );
    else report.byShape++;
  });
  return report;
}

/** Whether `value` equals `reference`: key order ignored, text white space collapsed, numbers as explained below. */
function matches(value: JsonValue, reference: JsonValue): boolean {
  if (typeof reference === 'number') return typeof value === 'number' && sameNumber(value, reference);
  if (typeof reference === 'string') return typeof value === 'string' && collapse(value) === collapse(reference);
  if (reference === null || typeof reference !== 'object') return value === reference;
  if (Array.isArray(reference))
    return (
      Array.isArray(value) &&
      value.length === reference.length &&
      reference.every((item, index) => matches(value[index]!, item))
    );
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const keys = Object.keys(reference);
  return (
    keys.length === Object.keys(value).length &&
    keys.every((key) => Object.hasOwn(value, key) && matches((value as JsonObject)[key]!, reference[key]!))
  );
}

// An LLM writes numbers rounded (6.21371 for 6.2137119…): a reference with decimals matches a value that rounds to
// it at its precision; a whole reference (a count, a price in cents) must be met exactly.
function sameNumber(value: number, reference: number): boolean {
  if (value === reference) return true;
  const decimals = /\.(\d+)$/.exec(String(reference))?.[1]?.length ?? 0;
  if (decimals === 0 || decimals > 15) return false;
  return Number(value.toFixed(decimals)) === reference;
}

function collapse(text: string): string {
  return text.trim().replace(/\s+/g, ' ');
}

function jsonType(value: JsonValue): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function shapeMismatch(value: JsonValue, reference: JsonValue): string | undefined {
  const [actual, expected] = [jsonType(value), jsonType(reference)];
  if (actual !== expected)
    return `the routine replied a ${actual} ${preview(value)} where a ${expected} like ${preview(reference)} was expected`;
  if (actual !== 'object') return undefined;
  const keysA = Object.keys(value as JsonObject).sort();
  const keysB = Object.keys(reference as JsonObject).sort();
  if (keysA.join('\u0000') === keysB.join('\u0000')) return undefined;
  return `the routine replied ${preview(value)}, with keys [${keysA.join(', ')}], where [${keysB.join(', ')}] were expected, as in ${preview(reference)}`;
}

function preview(value: unknown, max = 200): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
