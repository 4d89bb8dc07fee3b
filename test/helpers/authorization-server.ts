// A real OAuth 2.1 authorization server on loopback for the tests: oidc-provider (OpenID Certified) issuing JWT access
// tokens by the client-credentials grant, with resource indicators (RFC 8707) setting their audience.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import Provider from 'oidc-provider';

export type AuthorizationServer = {
  issuer: string;
  /** The private key the server signs with (a test signs hand-made tokens with it). */
  privateKey: CryptoKey;
  kid: string;
  /** A token from the token endpoint, by client credentials, for `resource` with `scope`. */
  token(options: { resource: string; scope?: string; clientId?: string; clientSecret?: string }): Promise<string>;
  close(): Promise<void>;
};

export const CLIENT_ID = 'agent-client';
export const CLIENT_SECRET = 'a-long-client-secret-for-tests-only';
export const SCOPES = ['agora.read', 'agora.query', 'agora.admin'];

/** Starts oidc-provider on 127.0.0.1, port 0; its clients may ask for any of {@link SCOPES}. */
export async function startAuthorizationServer(options: { ttlSeconds?: number } = {}): Promise<AuthorizationServer> {
  let handler: (request: IncomingMessage, response: ServerResponse) => void = (_request, response) => response.end();
  const server: Server = createServer((request, response) => handler(request, response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = 'test-key-1';
  const jwk = { ...(await exportJWK(privateKey)), kid, use: 'sig', alg: 'RS256' };
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope: SCOPES.join(' '),
      },
      {
        client_id: 'reader',
        client_secret: 'a-long-reader-secret-for-tests-only',
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        scope: 'agora.read',
      },
    ],
    jwks: { keys: [jwk] },
    scopes: SCOPES,
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined as unknown as string,
        useGrantedResource: () => true,
        getResourceServerInfo: (_context: unknown, resource: string) => ({
          scope: SCOPES.join(' '),
          audience: resource,
          accessTokenFormat: 'jwt',
          accessTokenTTL: options.ttlSeconds ?? 300,
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    ttl: { ClientCredentials: () => options.ttlSeconds ?? 300 },
  });
  const callback = provider.callback();
  handler = (request, response) => void callback(request, response);
  return {
    issuer,
    privateKey,
    kid,
    async token({ resource, scope, clientId = CLIENT_ID, clientSecret = CLIENT_SECRET }) {
      const response = await fetch(`${issuer}/token`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`,
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', resource, ...(scope ? { scope } : {}) }),
      });
      const body = (await response.json()) as { access_token?: string };
      if (!response.ok || body.access_token === undefined)
        throw new Error(`token endpoint: ${response.status} ${JSON.stringify(body)}`);
      return body.access_token;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
