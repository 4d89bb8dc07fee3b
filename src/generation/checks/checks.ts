// The checks a generated routine must pass before anyone may approve it: the recorded exchanges replayed (by value
// when the routine is deterministic, else by shape) and the LLM-written test queries (by shape against the LLM's
// reference answers).
import { prescribesJson } from '../../llm/peer-answers.js';
import { silentLogger } from '../../log.js';
import type { ProtocolDocument } from '../../protocol/document.js';
import { protocolInvalidInputReply } from '../../routine/run.js';
import type { JsonObject, JsonValue } from '../../schemas.js';
import { toolFunction, type Tool } from '../../tool/define.js';
import type { StoredExample } from '../writing/prompts.js';
import type { CheckCase } from '../lifecycle/records.js';
import type { QuickJSSandbox, SandboxResult } from '../sandbox/quickjs.js';
import { preview, sameValue } from '../writing/write.js';
import { plural } from '../../_plural.js';
import { checkProbeValues, type ProbeOutcome, type ValueProbe } from './value-check.js';

/**
 * A test query the LLM wrote from the protocol, with the LLM responder's two reference answers (see ./value-check.ts).
 */
export type Probe = ValueProbe;

/** Cases kept per routine: enough to judge it, bounded so a status record stays small. */
export const MAX_CHECK_CASES = 20;

/** Recorded exchanges in conversation order; a conversation whose first turns were not recorded is left out. */
function replayable(examples: readonly StoredExample[]): StoredExample[][] {
  const groups = new Map<string, StoredExample[]>();
  examples.forEach((example, index) => {
    const key = example.conversationId ?? `single-${index}`;
    groups.set(key, [...(groups.get(key) ?? []), example]);
  });
  const result: StoredExample[][] = [];
  for (const turns of groups.values()) {
    const sorted = [...turns].sort((a, b) => a.turn - b.turn);
    if (sorted.every((example, index) => example.turn === index + 1)) result.push(sorted);
  }
  return result;
}

export function parseStoredExample(value: JsonObject): StoredExample | undefined {
  if (!('body' in value) || !('reply' in value)) return undefined;
  const turn = typeof value.turn === 'number' ? value.turn : 1;
  const conversationId = typeof value.conversationId === 'string' ? value.conversationId : null;
  return { conversationId, turn, body: value.body as JsonValue, reply: value.reply as JsonValue };
}

/**
 * Runs a candidate routine on the recorded exchanges (by value when deterministic) and on the probes: by value where
 * the LLM responder gave the same answer twice (JSON protocols), else by shape; a text protocol's probes by type.
 */
export async function checkRoutine(
  module: QuickJSSandbox,
  document: ProtocolDocument,
  examples: readonly StoredExample[],
  probes: readonly Probe[],
  agentTools: readonly Tool[],
): Promise<{ errors: string[]; passed: string[]; cases: CheckCase[] }> {
  const json = prescribesJson(document);
  const cases: CheckCase[] = [];
  const passedCase = (label: string, by: CheckCase['by'], body: JsonValue, expected: JsonValue, actual: JsonValue) => {
    if (cases.length < MAX_CHECK_CASES)
      cases.push({ label, by, body: preview(body), expected: preview(expected), actual: preview(actual) });
  };
  const tools = toolbox(agentTools);
  const errors: string[] = [];
  let byValue = 0;
  let byShape = 0;
  const run = async (
    body: JsonValue,
    turn: number,
    id: string | null,
    state: JsonObject,
  ): Promise<{ reply: JsonValue; state: JsonObject }> => {
    const result = await module.run('handle', body, {
      conversation: { id, turn, state: structuredClone(state) },
      protocol: { name: document.metadata.name, hash: document.hash, metadata: document.metadata },
      tools,
      logger: silentLogger,
    });
    return { reply: answerOf(result, document), state: result.state ?? state };
  };
  const checkOutput = async (label: string, reply: JsonValue) => {
    const issues = (await module.run('checkOutput', reply)).value;
    if (typeof issues === 'string')
      errors.push(`${label}: the output schema refuses the expected reply ${preview(reply)}: ${issues}`);
  };

  const conversations = replayable(examples);
  for (const [index, turns] of conversations.entries()) {
    let state: JsonObject = {};
    for (const example of turns) {
      const label =
        turns.length > 1 ? `recorded conversation ${index + 1}, turn ${example.turn}` : `recorded example ${index + 1}`;
      const id = example.conversationId ? `check-${index + 1}` : null;
      let first: { reply: JsonValue; state: JsonObject };
      let second: { reply: JsonValue; state: JsonObject } | undefined;
      try {
        first = await run(example.body, example.turn, id, state);
        // Twice: a reply that changes between two runs comes from a clock or a live tool, compared by shape only.
        second = await run(example.body, example.turn, id, state).catch(() => undefined);
      } catch (error) {
        errors.push(
          `${label}: body ${preview(example.body)}: the routine failed: ${error instanceof Error ? error.message : String(error)}`,
        );
        break;
      }
      const deterministic = second !== undefined && sameValue(first.reply, second.reply);
      if (json && deterministic) {
        if (!sameValue(first.reply, example.reply))
          errors.push(
            `${label}: body ${preview(example.body)}: the routine replied ${preview(first.reply)} but the recorded reply is ${preview(example.reply)}`,
          );
        else {
          byValue++;
          passedCase(label, 'value', example.body, example.reply, first.reply);
        }
      } else {
        const mismatch = shapeMismatch(first.reply, example.reply, json);
        if (mismatch) errors.push(`${label}: body ${preview(example.body)}: ${mismatch}`);
        else {
          byShape++;
          passedCase(label, 'shape', example.body, example.reply, first.reply);
        }
      }
      if (json) await checkOutput(label, example.reply);
      state = first.state;
    }
  }
  const outcomes: ProbeOutcome[] = [];
  for (const [index, probe] of probes.entries()) {
    try {
      outcomes.push({
        reply: (await run(probe.body, 1, prescribesMultiround(document) ? `probe-${index + 1}` : null, {})).reply,
      });
      if (json) await checkOutput(`test query ${index + 1}`, probe.answers[0]);
    } catch (error) {
      outcomes.push({ error: error instanceof Error ? error.message : String(error) });
    }
  }
  const probed = json ? checkProbeValues(probes, outcomes) : textProbes(probes, outcomes);
  errors.push(...probed.mismatches);
  outcomes.forEach((outcome, index) => {
    const probe = probes[index]!;
    const label = `test query ${index + 1}`;
    // A passed probe is one no mismatch names; by value where the LLM answered the same twice (JSON protocols).
    if ('error' in outcome || probed.mismatches.some((line) => line.startsWith(`${label}:`))) return;
    passedCase(
      label,
      json && sameValue(probe.answers[0], probe.answers[1]) ? 'value' : 'shape',
      probe.body,
      probe.answers[0],
      outcome.reply,
    );
  });
  const recorded = byValue + byShape;
  const probedCount = probed.byValue + probed.byShape;
  if (!errors.length && recorded + probedCount === 0)
    errors.push('nothing to check the routine on: no recorded exchange and no test query');
  const passed: string[] = [];
  if (recorded) passed.push(`${plural(recorded, 'recorded turn')} (${byValue} by value, ${byShape} by shape)`);
  if (probedCount)
    passed.push(
      `${probedCount} test query(ies) written by the LLM (${probed.byValue} by value, ${probed.byShape} by shape vs the LLM's answers)`,
    );
  return { errors, passed, cases };
}

/**
 * A text protocol's probes: any text is a fitting reply (two LLM answers agreeing on prose say little about a routine).
 */
function textProbes(
  probes: readonly Probe[],
  outcomes: readonly ProbeOutcome[],
): { mismatches: string[]; byValue: number; byShape: number } {
  const report = { mismatches: [] as string[], byValue: 0, byShape: 0 };
  outcomes.forEach((outcome, index) => {
    const label = `test query ${index + 1}: body ${preview(probes[index]!.body)}`;
    if ('error' in outcome) report.mismatches.push(`${label}: the routine failed: ${outcome.error}`);
    else if (typeof outcome.reply !== 'string')
      report.mismatches.push(`${label}: ${shapeMismatch(outcome.reply, '', false)!}`);
    else report.byShape++;
  });
  return report;
}

function prescribesMultiround(document: ProtocolDocument): boolean {
  return document.metadata.multiround === true;
}

/**
 * The reply of a sandboxed `handle`: its value, or the PD's invalid-input reply when the input schema refused the body.
 */
export function answerOf(result: SandboxResult, document: ProtocolDocument): JsonValue {
  if (!result.invalid) return result.value;
  const reply = result.invalid.reply ?? protocolInvalidInputReply(document);
  // No prescribed error reply: let the LLM judge a body the generated schema refuses (the schema is a guess).
  if (reply === undefined) throw new Error(`the routine's input schema refuses the body: ${result.invalid.issues}`);
  return reply;
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** Why two replies differ in shape (JSON type and top-level keys), or undefined when they agree. */
function shapeMismatch(routine: JsonValue, expected: JsonValue, json: boolean): string | undefined {
  if (!json)
    return typeof routine === 'string'
      ? undefined
      : `the routine replied a ${jsonType(routine)}, the protocol's bodies are text`;
  const [a, b] = [jsonType(routine), jsonType(expected)];
  if (a !== b)
    return `the routine replied a ${a} ${preview(routine)} where a ${b} like ${preview(expected)} was expected`;
  if (a === 'object') {
    const keysA = Object.keys(routine as JsonObject).sort();
    const keysB = Object.keys(expected as JsonObject).sort();
    if (keysA.join('\u0000') !== keysB.join('\u0000'))
      return `the routine replied ${preview(routine)}, with keys [${keysA.join(', ')}], where [${keysB.join(', ')}] were expected, as in ${preview(expected)}`;
  }
  return undefined;
}

function toolbox(tools: readonly Tool[]): Record<string, (input: unknown) => Promise<unknown>> {
  // As the receiver makes them (see Folder.toolbox), so a check runs the routine as it will run.
  return Object.fromEntries(tools.map((tool) => [tool.name, toolFunction(tool)]));
}

export type { CheckCase } from '../lifecycle/records.js';
