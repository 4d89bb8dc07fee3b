// OAP's TaskEnvelope as its SDK's model defines it (`oap/envelope.py` of open-agent-protocol 0.3): `id`, `version`
// (default "0.1"), `goal`, `memory`, `steps_taken` (a list of `Step {agent_id, action, result, timestamp}`),
// `constraints {max_cost_usd, allowed_tools, deadline_ms}` and `handoff {next_agent, reason, partial_result}`. What
// this side writes passes that model's `TaskEnvelope.model_validate`; what it reads may also hold the bare agent
// names our earlier versions wrote as steps.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { JsonObject, JsonValue } from '../../schemas.js';

/** The envelope version written: OAP's TaskEnvelope default, what OAP's own clients send. */
export const OAP_ENVELOPE_VERSION = '0.1';

/** A step's `result` is the answer itself when its JSON is at most this long; else a truncated note. */
export const MAX_STEP_RESULT_CHARS = 2000;

/** How much of a longer answer a step's truncated note previews (characters). */
export const STEP_PREVIEW_CHARS = 500;

/** OAP's Handoff: the agent to hand the task to next, and why. */
export type OapHandoff = { next_agent: string; reason: string };

/** OAP's Step: which agent did what (`action`), its `result` (absent: OAP's default, null), and when (ISO 8601, absent when unknown). */
export type OapStep = { agent_id: string; action: string; result?: JsonValue; timestamp?: string };

/** OAP's TaskEnvelope, as this client sends it: every field OAP defines, none it does not. */
export type OapEnvelope = {
  id: string;
  version: string;
  goal: string;
  constraints: JsonObject;
  memory: JsonObject;
  steps_taken: OapStep[];
  handoff: OapHandoff | null;
};

// The date-times pydantic's `datetime` parses from a string (date, then optionally a time and a zone); the ranges of
// each part are checked in `isIsoDateTime`. Unix numbers, which pydantic also reads, are not taken: OAP writes strings.
const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt_ ](\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d{1,9})?)?(?:[Zz]|[+-](\d{2}):?(\d{2}))?)?$/;

/** Whether a string is an ISO 8601 date-time OAP's `Step.timestamp` accepts (a real calendar day, a real time). */
export function isIsoDateTime(text: string): boolean {
  const match = ISO_DATE_TIME.exec(text);
  if (match === null) return false;
  const [year, month, day, hour = 0, minute = 0, second = 0, zoneHour = 0, zoneMinute = 0] = match
    .slice(1)
    .map((part) => (part === undefined ? undefined : Number(part)));
  if (year === undefined || month === undefined || day === undefined || year < 1) return false;
  const date = new Date(Date.UTC(2000, month - 1, day));
  date.setUTCFullYear(year);
  const realDay = date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
  return realDay && hour <= 23 && minute <= 59 && second <= 59 && zoneHour <= 23 && zoneMinute <= 59;
}

/** OAP's Step as read: agent and action strings, any result, a timestamp when there is one; other fields kept. */
export const oapStepSchema = z.looseObject({
  agent_id: z.string(),
  action: z.string(),
  // Not walked: it came from JSON.parse, so it is JSON, and a deeply nested one must not exhaust the stack here.
  result: z.unknown().optional(),
  timestamp: z.string().refine(isIsoDateTime, 'an ISO 8601 date-time').optional(),
});

/** OAP's Constraints as read: each field optional or null; other fields kept. */
export const oapConstraintsSchema = z.looseObject({
  max_cost_usd: z.number().nullish(),
  allowed_tools: z.array(z.string()).nullish(),
  deadline_ms: z.number().int().nullish(),
});

/** A step's result, bounded: the answer when its JSON fits {@link MAX_STEP_RESULT_CHARS}, else a preview of it. */
export function stepResult(result: JsonValue): JsonValue {
  let text: string;
  try {
    text = JSON.stringify(result) ?? 'null';
  } catch {
    // Nested past what JSON.stringify can walk: no preview to give.
    return { truncated: true, preview: '' };
  }
  if (text.length <= MAX_STEP_RESULT_CHARS) return result;
  const preview = typeof result === 'string' ? result : text;
  return { truncated: true, preview: preview.slice(0, STEP_PREVIEW_CHARS) };
}

/**
 * An OAP Step: what an agent did and when, its result bounded by {@link stepResult}.
 * @example oapStep('planner', 'answered', 'three days in Lyon', Date.now())
 */
export function oapStep(agentId: string, action: string, result: JsonValue, at: number): OapStep {
  return { agent_id: agentId, action, result: stepResult(result), timestamp: new Date(at).toISOString() };
}

/**
 * A step as read from an envelope: an OAP Step as it came (unknown fields too), or a bare agent name (our earlier
 * versions wrote those for an agent that answered) as a Step with no timestamp; undefined when it is neither.
 */
export function readOapStep(value: unknown): OapStep | undefined {
  if (typeof value === 'string') return { agent_id: value, action: 'answered', result: null };
  const parsed = oapStepSchema.safeParse(value);
  return parsed.success ? (parsed.data as OapStep) : undefined;
}

/** What {@link oapEnvelope} builds an envelope from. */
export type OapEnvelopeInput = {
  goal: string;
  /** Stable across the hops of one chain (default: a fresh UUID). */
  id?: string;
  /** What the previous hop answered: carried as `memory.last_result`. */
  input?: JsonValue;
  memory?: JsonObject;
  constraints?: JsonObject;
  /** The steps so far, oldest first: Steps, or agent names (written as Steps that say the agent answered). */
  stepsTaken?: readonly (OapStep | string)[];
  handoff?: OapHandoff | null;
};

/** A full TaskEnvelope (version, constraints, memory, steps_taken, handoff) for a goal. */
export function oapEnvelope(input: OapEnvelopeInput): OapEnvelope {
  return {
    id: input.id ?? randomUUID(),
    version: OAP_ENVELOPE_VERSION,
    goal: input.goal,
    constraints: input.constraints ?? {},
    memory: { ...(input.memory ?? {}), ...(input.input !== undefined ? { last_result: input.input } : {}) },
    steps_taken: (input.stepsTaken ?? []).map((step) =>
      typeof step === 'string' ? { agent_id: step, action: 'answered', result: null } : step,
    ),
    handoff: input.handoff ?? null,
  };
}
