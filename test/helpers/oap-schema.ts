// OAP's envelope as its SDK's pydantic models define it (open-agent-protocol 0.3, `oap/envelope.py`: Step,
// Constraints, Handoff, TaskEnvelope), one copy for both directions. Facts taken from that file:
// - Step: `agent_id: str`, `action: str`, `result: Any = None`, `timestamp: datetime` (default: now, UTC). pydantic
//   reads a datetime from an ISO 8601 string; a bare string in `steps_taken` is refused ("Input should be a valid
//   dictionary or instance of Step"), and so is `timestamp: null`.
// - Constraints: `max_cost_usd: float | None`, `allowed_tools: list[str] | None`, `deadline_ms: int | None`, all None
//   by default; `null` for the whole `constraints` is refused.
// - Handoff: `next_agent: str`, `reason: str` (both required), `partial_result: Any = None`.
// - TaskEnvelope: `id: str` (default a UUID), `version: str = "0.1"`, `goal: str`, `memory: dict[str, Any]`,
//   `steps_taken: list[Step]`, `constraints: Constraints`, `handoff: Handoff | None`; a non-string `id` or `version`
//   is refused.
// pydantic ignores unknown fields; these schemas refuse them, so a field of our own making shows. The face's replies
// are read with `oapTaskEnvelope` (what the model allows, defaults left out); the envelopes our hub and clients send
// with `oapTaskEnvelopeSent` (every field written out, every step timestamped).
import { z } from 'zod';

const json = z.json();

/** OAP's Step as its model reads it (the timestamp may be left to its default). */
export const oapStep = z.strictObject({
  agent_id: z.string(),
  action: z.string(),
  result: json.optional(),
  // ISO 8601 with a zone (`Z` or an offset), as pydantic's `model_dump(mode="json")` writes an aware datetime.
  timestamp: z.iso.datetime({ offset: true }).optional(),
});

/** A Step as we write one: result and timestamp present. */
export const oapStepWritten = oapStep.required({ result: true, timestamp: true });

/** OAP's Constraints: every field optional or null. */
export const oapConstraints = z.strictObject({
  max_cost_usd: z.number().nullable().optional(),
  allowed_tools: z.array(z.string()).nullable().optional(),
  deadline_ms: z.number().int().nullable().optional(),
});

/** OAP's Handoff; our agents always say why (OAP takes an empty reason, we never write one). */
export const oapHandoff = z.strictObject({
  next_agent: z.string().min(1),
  reason: z.string().min(1),
  partial_result: json.optional(),
});

/** OAP's TaskEnvelope: the goal, memory (the last hop's answer in `memory.last_result`), the Steps taken, constraints, and a handoff only when the task goes on. */
export const oapTaskEnvelope = z.strictObject({
  id: z.string().optional(),
  version: z.string().optional(),
  goal: z.string(),
  memory: z.record(z.string(), json).optional(),
  steps_taken: z.array(oapStep).optional(),
  constraints: oapConstraints.optional(),
  handoff: oapHandoff.nullable().optional(),
});

/** An envelope as our hub and clients send it: the same rules, every field present, every step a written one. */
export const oapTaskEnvelopeSent = oapTaskEnvelope.extend({ steps_taken: z.array(oapStepWritten) }).required();
