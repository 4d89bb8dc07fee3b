// How an A2A agent is recognised: its card at `/.well-known/agent-card.json`, 1.0 (`supportedInterfaces`) or 0.3
// (`url`), naming the agent and an interface; its skills (names and tags) are its capabilities.
import { z } from 'zod';
import type { Probe } from '../binding.js';

const cardSchema = z
  .object({
    name: z.string().max(200),
    description: z.string().max(2000).optional(),
    supportedInterfaces: z
      .array(z.object({ url: z.string().max(2000) }))
      .max(20)
      .optional(),
    url: z.string().max(2000).optional(),
    skills: z
      .array(
        z.object({
          name: z.string().max(200),
          description: z.string().max(2000).optional(),
          tags: z.array(z.string().max(100)).max(50).optional(),
        }),
      )
      .max(100)
      .optional(),
  })
  .refine(
    (card) => (card.supportedInterfaces?.length ?? 0) > 0 || card.url !== undefined,
    'an A2A card names an interface',
  );

/** A2A's probe: its card, after ROAR's. */
export const A2A_PROBES: readonly Probe[] = [
  {
    order: 20,
    path: '/.well-known/agent-card.json',
    // The version header: an a2a-js 1.0 server with its 0.3 layer on refuses a card request without it.
    headers: { accept: 'application/json', 'a2a-version': '1.0' },
    read(json) {
      const parsed = cardSchema.safeParse(json);
      if (!parsed.success) return undefined;
      const { name, description, skills = [] } = parsed.data;
      return {
        speaks: true,
        name,
        ...(description ? { description } : {}),
        capabilities: [...skills.map((skill) => skill.name), ...skills.flatMap((skill) => skill.tags ?? [])],
      };
    },
  },
];
