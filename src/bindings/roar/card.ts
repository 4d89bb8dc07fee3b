// ROAR's agent card (`GET /roar/card`, and `GET /roar/agents` as its SDK lists it): the identity, the served
// protocols as skills and declared capabilities (with their Agora hash), the endpoints.
import { cardAuth } from '../../edge/bearer.js';
import type { AuthDescription } from '../../edge/oauth.js';
import type { CatalogueEntry } from '../../faces/catalogue.js';
import { identityJson, type RoarIdentity } from './identity.js';

/** The intents this face answers, listed as the identity's capabilities (plus `stream`). */
export const ROAR_CAPABILITIES = [
  'execute',
  'delegate',
  'ask',
  'update',
  'discover',
  'notify',
  'monitor',
  'stream',
] as const;

/** What the card says about the agent beyond its identity. */
export type RoarCardInput = {
  identity: RoarIdentity;
  description: string;
  baseUrl: string;
  protocols: readonly CatalogueEntry[];
  /** Whether a bearer token is needed, and the OAuth scheme when an authorization server issues it. */
  tokens?: boolean;
  auth?: AuthDescription | undefined;
};

/** The agent card as ROAR's `AgentCard` JSON. */
export function roarCard(input: RoarCardInput): Record<string, unknown> {
  const ws = input.baseUrl.replace(/^http/, 'ws');
  return {
    identity: identityJson(input.identity, ROAR_CAPABILITIES),
    description: input.description,
    skills: input.protocols.map((protocol) => protocol.name),
    channels: ['http', 'websocket'],
    // `websocket` is the base URL ROAR's SDK connects under (`/roar/ws`, `/roar/ws/stream`); `ws` the full path, as
    // before.
    endpoints: { http: input.baseUrl, websocket: ws, ws: `${ws}/roar/ws` },
    declared_capabilities: input.protocols.map((protocol) => ({
      name: protocol.name,
      description: protocol.description,
      // An Agora-aware caller sends `payload: {protocolHash, body}` with this hash and skips the LLM.
      protocolHash: protocol.hash,
      input_schema: {},
      output_schema: {},
    })),
    metadata: {
      agora: { wellknown: `${input.baseUrl}/wellknown`, protocols: `${input.baseUrl}/protocols/` },
      ...(input.tokens ? { auth: cardAuth(input.auth) } : {}),
    },
  };
}
