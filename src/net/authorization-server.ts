// An OAuth 2.1 authorization server as its metadata tells of it: found from its issuer identifier by RFC 8414 (the
// well-known path inserted before the issuer's path), then OpenID Connect Discovery (appended), the document naming
// exactly that issuer (RFC 8414 §3.3). Both sides use it: the clients for the token endpoint, the edge for the keys.
import { AgoraError } from '../errors.js';

/** Largest metadata document (or token reply) read, in bytes. */
export const MAX_AUTHORIZATION_DOCUMENT_BYTES = 256 * 1024;

/** An authorization server's metadata: where it was found, and the document. */
export type AuthorizationServerMetadata = {
  /** The URL the document was read at. */
  url: string;
  issuer: string;
  tokenEndpoint?: string;
  jwksUri?: string;
  document: Record<string, unknown>;
};

/** Options of {@link discoverAuthorizationServer}; durations in ms. */
export type DiscoveryOptions = { fetch?: typeof fetch; timeoutMs?: number };

/** The URLs an issuer's metadata may be at, in the order asked. */
export function metadataUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
  ];
}

/**
 * The metadata of the authorization server `issuer` names; a failure (every URL tried) is a `PEER_FAILURE` saying
 * why each was refused.
 * @example const { tokenEndpoint } = await discoverAuthorizationServer('https://login.example.com/realms/agents');
 */
export async function discoverAuthorizationServer(
  issuer: string,
  options: DiscoveryOptions = {},
): Promise<AuthorizationServerMetadata> {
  const failures: string[] = [];
  for (const url of metadataUrls(issuer)) {
    try {
      const document = await fetchJsonObject(url, { method: 'GET' }, options);
      if (document.issuer !== issuer) throw new Error(`it names issuer ${String(document.issuer).slice(0, 200)}`);
      const text = (name: string) => (typeof document[name] === 'string' ? (document[name] as string) : undefined);
      const tokenEndpoint = text('token_endpoint');
      const jwksUri = text('jwks_uri');
      return {
        url,
        issuer,
        document,
        ...(tokenEndpoint !== undefined ? { tokenEndpoint } : {}),
        ...(jwksUri !== undefined ? { jwksUri } : {}),
      };
    } catch (error) {
      failures.push(`${url}: ${(error as Error).message}`);
    }
  }
  throw new AgoraError('PEER_FAILURE', `no metadata of authorization server ${issuer} (${failures.join('; ')})`);
}

/**
 * A JSON object read from an authorization server: no redirect followed, the wait and the size bounded; any other
 * reply fails with its status (and the `error` of an OAuth error reply).
 */
export async function fetchJsonObject(
  url: string,
  init: RequestInit,
  options: DiscoveryOptions = {},
): Promise<Record<string, unknown>> {
  const response = await (options.fetch ?? fetch)(url, {
    ...init,
    headers: { accept: 'application/json', ...(init.headers as Record<string, string> | undefined) },
    redirect: 'error',
    signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
  });
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    size += chunk.byteLength;
    if (size > MAX_AUTHORIZATION_DOCUMENT_BYTES)
      throw new Error(`status ${response.status}, larger than ${MAX_AUTHORIZATION_DOCUMENT_BYTES} bytes`);
    chunks.push(chunk);
  }
  let value: unknown;
  try {
    value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    value = undefined;
  }
  const object = typeof value === 'object' && value !== null && !Array.isArray(value);
  if (!response.ok) {
    const error = object ? (value as Record<string, unknown>).error : undefined;
    throw new Error(`status ${response.status}${typeof error === 'string' ? ` ${error.slice(0, 100)}` : ''}`);
  }
  if (!object) throw new Error(`status ${response.status}, not a JSON object`);
  return value as Record<string, unknown>;
}
