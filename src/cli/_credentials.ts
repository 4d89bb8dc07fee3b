// Internal: a client's OAuth 2.1 client credentials (`--client-id`, `--client-secret` or AGORA_CLIENT_SECRET,
// `--token-url` or the issuer's discovery, `--client-scope`, `--client-resource`), for every command that talks to an
// agent or a hub, and for a served hub's own requests to agents.
import {
  ClientCredentials,
  originResource,
  type ClientCredentialsOptions,
  type TokenSource,
} from '../net/token-source.js';
import { stringOption, UsageError, type OptionSpec, type ParsedArgs } from './_command.js';

/** The flags of client credentials; `--auth-issuer` (a server's, `AUTH_OPTIONS`) finds the token endpoint too. */
export const CLIENT_CREDENTIALS_OPTIONS: Record<
  'client-id' | 'client-secret' | 'token-url' | 'client-scope' | 'client-resource',
  OptionSpec
> = {
  'client-id': {
    type: 'string',
    value: '<id>',
    description: 'OAuth 2.1 client id: get access tokens by the client-credentials grant (with --client-secret)',
    env: 'AGORA_CLIENT_ID',
  },
  'client-secret': {
    type: 'string',
    value: '<secret>',
    description: 'Secret of --client-id (prefer the environment variable: a flag shows in the process list)',
    env: 'AGORA_CLIENT_SECRET',
  },
  'token-url': {
    type: 'string',
    value: '<url>',
    description: "The authorization server's token endpoint (default: discovered from --auth-issuer)",
    env: 'AGORA_TOKEN_URL',
  },
  'client-scope': {
    type: 'string',
    value: '<scopes>',
    description: 'Scopes asked for with --client-id, space-separated (default: none, the server decides)',
    env: 'AGORA_CLIENT_SCOPE',
  },
  'client-resource': {
    type: 'string',
    value: '<url>',
    description:
      'The resource (RFC 8707) tokens are asked for, their audience (default: the URL talked to); ' +
      "`audience=<url>`: Auth0's parameter instead; `none`: neither (Entra ID: --client-scope api://…/.default)",
    env: 'AGORA_CLIENT_RESOURCE',
  },
};

/** `--auth-issuer` for a command that only gets tokens: where the token endpoint is discovered. */
export const TOKEN_ISSUER_OPTION: OptionSpec = {
  type: 'string',
  value: '<url>',
  description: 'OAuth 2.1 issuer whose token endpoint --client-id uses (found by RFC 8414 / OpenID discovery)',
  env: 'AGORA_AUTH_ISSUER',
};

/**
 * The token source of the client credentials given (declared by {@link CLIENT_CREDENTIALS_OPTIONS}), undefined
 * without `--client-id` (given, its tokens win over a static `--token`); `resource` is the default audience: a URL
 * (the agent or hub talked to), or `each-origin` (a hub's or a chain's requests to many agents: each origin its own).
 */
export function clientCredentials(args: ParsedArgs, resource: string | 'each-origin'): TokenSource | undefined {
  const clientId = stringOption(args, 'client-id');
  const clientSecret = stringOption(args, 'client-secret');
  const tokenUrl = stringOption(args, 'token-url');
  const issuer = stringOption(args, 'auth-issuer');
  if (clientId === undefined) return undefined;
  if (clientSecret === undefined)
    throw new UsageError('--client-id needs its secret: set AGORA_CLIENT_SECRET (or --client-secret)');
  if (tokenUrl === undefined && issuer === undefined)
    throw new UsageError('--client-id needs the token endpoint: --token-url, or --auth-issuer to discover it');
  const given = stringOption(args, 'client-resource');
  try {
    return new ClientCredentials({
      clientId,
      clientSecret,
      tokenUrl,
      issuer,
      scope: stringOption(args, 'client-scope'),
      ...resourceOf(given, resource),
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

// What --client-resource says (none, Auth0's `audience=`, a URL) over the command's default.
function resourceOf(
  given: string | undefined,
  fallback: string,
): Pick<ClientCredentialsOptions, 'resource' | 'resourceParameter'> {
  if (given === 'none') return {};
  const audience = given?.startsWith('audience=') ? given.slice('audience='.length) : undefined;
  if (audience !== undefined) return { resource: audience, resourceParameter: 'audience' };
  return { resource: given ?? (fallback === 'each-origin' ? originResource : baseOf(fallback)) };
}

// A URL as an audience: no query, fragment or trailing slash (`https://agent.example/agora`).
function baseOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}`;
}
