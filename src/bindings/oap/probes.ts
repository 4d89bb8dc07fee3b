// How an OAP agent is recognised: its `GET /` naming an `agent_id` or listing `capabilities` (what `oap register`
// reads); those capabilities count whatever the agent's kind.
import { z } from 'zod';
import type { Probe } from '../binding.js';

const infoSchema = z.object({
  agent_id: z.string().max(200).optional(),
  capabilities: z.array(z.string().max(100)).max(100).optional(),
  description: z.string().max(2000).optional(),
});

/** OAP's probe: `GET /`, after the cards. */
export const OAP_PROBES: readonly Probe[] = [
  {
    order: 30,
    path: '/',
    read(json) {
      const parsed = infoSchema.safeParse(json);
      if (!parsed.success) return undefined;
      const { agent_id: name, description, capabilities } = parsed.data;
      return {
        speaks: name !== undefined || capabilities !== undefined,
        ...(name ? { name } : {}),
        ...(description ? { description } : {}),
        capabilities: capabilities ?? [],
        announced: capabilities ?? [],
      };
    },
  },
];
