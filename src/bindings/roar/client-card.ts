// What a ROAR client reads of an agent before it speaks to it: its card (the DID messages are addressed to), or for
// an agent that serves none (ROAR's own router), its `/roar/health` and the address we know it by.
import { z } from 'zod';
import type { JsonObject } from '../../schemas.js';
import { agentBaseUrl } from '../../sender/transport.js';

const identitySchema = z.looseObject({
  did: z.string().min(1).max(600),
  display_name: z.string().max(200).optional(),
  agent_type: z.string().max(50).optional(),
  capabilities: z.array(z.string().max(100)).max(200).optional(),
  version: z.string().max(20).optional(),
  public_key: z.string().max(200).nullish(),
});

/** ROAR's AgentCard, as far as a client reads it (other fields are kept, unread). */
export const roarCardSchema = z.looseObject({
  identity: identitySchema,
  description: z.string().max(4000).optional(),
  skills: z.array(z.string().max(200)).max(200).optional(),
  channels: z.array(z.string().max(50)).max(20).optional(),
  endpoints: z.record(z.string(), z.string().max(2000)).optional(),
  declared_capabilities: z
    .array(z.looseObject({ name: z.string().max(200), description: z.string().max(2000).optional() }))
    .max(200)
    .optional(),
});

/** A ROAR agent's card. */
export type RoarCard = z.infer<typeof roarCardSchema>;

/**
 * Whom a message to a card-less agent is addressed to: `did:web` of its URL (host, port, path), the one identity
 * we know it by. ROAR's own router (roar_sdk `router.py`, 0.3.2) reads no `to`; the signature covers the DID we send,
 * so it must not be empty (the SDK would make up a random DID in its place and the HMAC would not verify).
 */
export function cardlessAddress(url: string): JsonObject {
  const parsed = new URL(agentBaseUrl(url));
  const path = parsed.pathname.split('/').filter(Boolean).map(encodeURIComponent);
  const did = ['did:web', encodeURIComponent(parsed.host), ...path].join(':');
  return { did, display_name: '', agent_type: 'agent', capabilities: [], version: '1.0', public_key: null };
}

/** Whether a `/roar/health` answer is ROAR's: `{"status": "ok", "protocol": "roar/1.0"}` (roar_sdk `router.py`). */
export function isRoarHealth(json: Record<string, unknown>): boolean {
  return (
    (json.status === 'ok' || json.status === 'healthy') &&
    typeof json.protocol === 'string' &&
    /^roar\/\d/i.test(json.protocol)
  );
}
