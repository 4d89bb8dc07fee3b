// How a ROAR agent is recognised: its card (`GET /roar/card`, with the DID messages are addressed to), or, for an
// agent that serves none (ROAR's own router), its `GET /roar/health` naming `roar/…`, read last.
import { z } from 'zod';
import { fieldsOf, type Probe } from '../binding.js';
import { isRoarHealth } from './client-card.js';

// A card as far as recognition reads it: the identity is optional here (a card without one names the agent, but
// does not make it a ROAR agent: messages need its DID).
const cardSchema = z.object({
  identity: z
    .object({
      did: z.string().min(1).max(600),
      display_name: z.string().max(200).optional(),
      capabilities: z.array(z.string().max(100)).max(100).optional(),
    })
    .optional(),
  display_name: z.string().max(200).optional(),
  name: z.string().max(200).optional(),
  description: z.string().max(2000).optional(),
  capabilities: z.array(z.string().max(100)).max(100).optional(),
  skills: z.array(z.string().max(200)).max(100).optional(),
  declared_capabilities: z
    .array(z.object({ name: z.string().max(200) }))
    .max(100)
    .optional(),
});

/** ROAR's probes: the card second after Agora's `/wellknown`, the card-less health last of all. */
export const ROAR_PROBES: readonly Probe[] = [
  {
    order: 10,
    path: '/roar/card',
    read(json) {
      const parsed = cardSchema.safeParse(json);
      if (!parsed.success) return undefined;
      const card = parsed.data;
      const name = card.identity?.display_name || card.display_name || card.name;
      return {
        speaks: card.identity !== undefined,
        ...(name ? { name } : {}),
        ...(card.description ? { description: card.description } : {}),
        // Its identity's capabilities, skills and declared capabilities' names.
        capabilities: [
          ...(card.identity?.capabilities ?? []),
          ...(card.capabilities ?? []),
          ...(card.skills ?? []),
          ...(card.declared_capabilities ?? []).map((capability) => capability.name),
        ],
        announced: card.capabilities ?? [],
      };
    },
  },
  {
    order: 90,
    path: '/roar/health',
    fallback: true,
    read: (json) => (isRoarHealth(fieldsOf(json) ?? {}) ? { speaks: true } : undefined),
  },
];
