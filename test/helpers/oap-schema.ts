// OAP 0.3's envelope as its README defines it, strictly (unknown fields refused): what every envelope our hub and
// clients send must be. (test/faces/ may hold the face side's copy: the two should become one.)
import { z } from 'zod';

/** OAP's Handoff: who takes the task next, and why. */
export const oapHandoffSchema = z.strictObject({ next_agent: z.string().min(1), reason: z.string() });

/** OAP's TaskEnvelope. */
export const oapTaskEnvelopeSchema = z.strictObject({
  id: z.string().min(1),
  version: z.string().min(1),
  goal: z.string().min(1),
  constraints: z.record(z.string(), z.unknown()),
  memory: z.record(z.string(), z.unknown()),
  steps_taken: z.array(z.string()),
  handoff: oapHandoffSchema.nullable(),
});
