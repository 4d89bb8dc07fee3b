// OAP 0.3's envelope as its README defines it, strictly (unknown fields refused): one copy for both directions. The
// face's replies are read with `oapTaskEnvelope` (what OAP allows); the envelopes our hub and clients send with
// `oapTaskEnvelopeSent` (every field written out).
import { z } from 'zod';

const json = z.json();

/** OAP 0.3's Handoff: both fields required ("handoff.next_agent" names the next agent, `reason` says why). */
export const oapHandoff = z.strictObject({ next_agent: z.string().min(1), reason: z.string().min(1) });

/**
 * OAP 0.3's TaskEnvelope: the goal, memory (the last hop's answer in `memory.last_result`), the steps taken (the
 * agents the task went through, in order), optional constraints, and a handoff only when the task goes on.
 */
export const oapTaskEnvelope = z.strictObject({
  id: z.string().min(1),
  version: z.string().optional(),
  goal: z.string().min(1),
  memory: z.record(z.string(), json),
  steps_taken: z.array(z.string()),
  constraints: z.record(z.string(), json).nullable().optional(),
  handoff: oapHandoff.nullable().optional(),
});

/** An envelope as our hub and clients send it: the same rules, every field present. */
export const oapTaskEnvelopeSent = oapTaskEnvelope.required({ version: true, constraints: true, handoff: true });
