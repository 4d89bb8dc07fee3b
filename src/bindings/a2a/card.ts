// A2A 1.0's agent card (`GET /.well-known/agent-card.json`): one skill per served protocol.
import type { AuthDescription } from '../../edge/oauth.js';
import type { CatalogueEntry } from '../../faces/catalogue.js';

/** The path the JSON-RPC endpoint answers at, relative to the mount point. */
export const A2A_RPC_PATH = '/a2a';

/** The agent card in A2A 1.0's JSON shape. */
export function a2aCard(input: {
  name: string;
  description: string;
  version: string;
  baseUrl: string;
  protocols: readonly CatalogueEntry[];
  tokens: boolean;
  /** The OAuth scheme, when the agent takes an authorization server's access tokens. */
  auth?: AuthDescription | undefined;
}): Record<string, unknown> {
  return {
    name: input.name,
    description: input.description || `${input.name}, an Agora agent`,
    version: input.version,
    // The same endpoint speaks 0.3 too (its method names); 1.0 first, the one a client of both picks.
    supportedInterfaces: [
      { url: `${input.baseUrl}${A2A_RPC_PATH}`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: `${input.baseUrl}${A2A_RPC_PATH}`, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ],
    // Without `streaming: true`, @a2a-js/sdk silently turns streams into blocking calls.
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: input.protocols.map((protocol) => ({
      id: protocol.hash,
      name: protocol.name,
      description: protocol.description,
      tags: ['agora', ...(protocol.multiround ? ['multiround'] : [])],
      examples: [],
      inputModes: ['application/json'],
      outputModes: ['application/json'],
    })),
    ...(input.tokens ? security(input.auth) : {}),
  };
}

// A bearer token, and with OAuth the scheme that says where to get one (A2A 1.0's OAuth2SecurityScheme: the
// authorization server's metadata, the client-credentials flow and its scopes); either satisfies the agent.
function security(auth: AuthDescription | undefined): Record<string, unknown> {
  const bearer = { httpAuthSecurityScheme: { scheme: 'Bearer', ...(auth ? { bearerFormat: 'JWT' } : {}) } };
  if (auth === undefined)
    return { securitySchemes: { bearer }, securityRequirements: [{ schemes: { bearer: { list: [] } } }] };
  const scopes = [...new Set(Object.values(auth.scopes).flat())];
  const flows =
    auth.tokenEndpoint === undefined
      ? {}
      : {
          flows: {
            clientCredentials: {
              tokenUrl: auth.tokenEndpoint,
              scopes: Object.fromEntries(scopes.map((scope) => [scope, `${scope} on this agent`])),
            },
          },
        };
  const oauth = {
    oauth2SecurityScheme: {
      description: `Access tokens of ${auth.issuer}; resource metadata at ${auth.resourceMetadata}`,
      ...(auth.serverMetadata !== undefined ? { oauth2MetadataUrl: auth.serverMetadata } : {}),
      ...flows,
    },
  };
  return {
    securitySchemes: { bearer, oauth },
    securityRequirements: [{ schemes: { oauth: { list: scopes } } }, { schemes: { bearer: { list: [] } } }],
  };
}
