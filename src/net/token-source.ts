// Access tokens for the clients, by OAuth 2.1's client-credentials grant: the token endpoint given, or found from the
// issuer (authorization-server.ts); one token per resource (RFC 8707: the agent or hub it is for), kept until shortly
// before it expires, then renewed (one request at a time, however many callers wait).
import { AgoraError } from '../errors.js';
import { discoverAuthorizationServer, fetchJsonObject } from './authorization-server.js';

/** Where a client's bearer token comes from: asked before each request that carries one. */
export interface TokenSource {
  /** A token valid now for a request to `url` (renewed when close to expiry). */
  token(url?: string): Promise<string>;
}

/** The defaults of {@link ClientCredentialsOptions} (durations in ms). */
export const CLIENT_CREDENTIALS_DEFAULTS = {
  /** Renew a token this long before it expires (at most half its lifetime). */
  renewBeforeMs: 60_000,
  /** Bound on each request to the authorization server. */
  timeoutMs: 10_000,
  /** Lifetime assumed of a token whose reply has no `expires_in`. */
  assumedLifetimeMs: 300_000,
  /** Resources whose tokens are kept at once (a hub reaching many agents); the least recently asked goes first. */
  maxResources: 256,
} as const;

/** Options of {@link ClientCredentials}; durations in ms. */
export type ClientCredentialsOptions = {
  clientId: string;
  clientSecret: string;
  /** The token endpoint; without it, discovered from `issuer`. */
  tokenUrl?: string | undefined;
  issuer?: string | undefined;
  /**
   * The resource a token is for (RFC 8707: the agent's or hub's URL, its audience): one URL, or a function of the
   * request's URL ({@link originResource}: each origin its own token); none: the server's default audience.
   */
  resource?: string | ((url: string) => string | undefined) | undefined;
  /**
   * The parameter that names the resource: `resource` (RFC 8707, default: Keycloak, Okta, oidc-provider) or `audience`
   * (Auth0's). Entra ID's v2 endpoint takes neither: leave `resource` out and ask for `scope: 'api://…/.default'`.
   */
  resourceParameter?: 'resource' | 'audience';
  /** Space-separated scopes asked for. */
  scope?: string | undefined;
  /** Renew a token this long before it expires (default 60 s; at most half its lifetime): a test forces a renewal. */
  renewBeforeMs?: number;
  timeoutMs?: number;
  maxResources?: number;
  fetch?: typeof fetch;
  now?: () => number;
};

/** A request URL's origin as the resource of its token: what a hub reaching many agents asks for. */
export function originResource(url: string): string {
  return new URL(url).origin;
}

type Held = { token: string; renewAt: number };

/**
 * A {@link TokenSource} by the client-credentials grant (RFC 6749 §4.4).
 * @example
 * const tokenSource = new ClientCredentials({ clientId, clientSecret, issuer, resource: 'https://agent.example' });
 * const sender = new Sender({ tokenSource });
 */
export class ClientCredentials implements TokenSource {
  readonly #options: ClientCredentialsOptions;
  readonly #now: () => number;
  readonly #held = new Map<string, Held>();
  readonly #pending = new Map<string, Promise<string>>();
  #tokenUrl: Promise<string> | undefined;

  constructor(options: ClientCredentialsOptions) {
    if (options.tokenUrl === undefined && options.issuer === undefined)
      throw new AgoraError('INVALID_ARGUMENT', 'client credentials: give a token URL or an issuer to discover it from');
    for (const [name, value] of [
      ['token URL', options.tokenUrl],
      ['issuer', options.issuer],
    ] as const)
      if (value !== undefined && !/^https?:$/.test(URL.canParse(value) ? new URL(value).protocol : ''))
        throw new AgoraError('INVALID_ARGUMENT', `client credentials: the ${name} is not an http(s) URL: ${value}`);
    this.#options = options;
    this.#now = options.now ?? Date.now;
    if (options.tokenUrl !== undefined) this.#tokenUrl = Promise.resolve(options.tokenUrl);
  }

  token(url?: string): Promise<string> {
    const { resource } = this.#options;
    const target = typeof resource === 'function' ? (url === undefined ? undefined : resource(url)) : resource;
    const key = target ?? '';
    const held = this.#held.get(key);
    if (held !== undefined && this.#now() < held.renewAt) {
      // Least recently asked last: the first entry is the one to drop.
      this.#held.delete(key);
      this.#held.set(key, held);
      return Promise.resolve(held.token);
    }
    let pending = this.#pending.get(key);
    if (pending === undefined) {
      pending = this.#request(key, target).finally(() => this.#pending.delete(key));
      this.#pending.set(key, pending);
    }
    return pending;
  }

  /** Forgets the tokens held (a server refused one: the next request gets a fresh one). */
  forget(): void {
    this.#held.clear();
  }

  async #request(key: string, resource: string | undefined): Promise<string> {
    const url = await this.#endpoint();
    const { clientId, clientSecret, scope } = this.#options;
    const started = this.#now();
    let body: Record<string, unknown>;
    try {
      body = await fetchJsonObject(
        url,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            // RFC 6749 §2.3.1: the id and secret form-encoded, then Basic.
            authorization: `Basic ${basic(clientId, clientSecret)}`,
          },
          body: new URLSearchParams({
            grant_type: 'client_credentials',
            ...(resource ? { [this.#options.resourceParameter ?? 'resource']: resource } : {}),
            ...(scope ? { scope } : {}),
          }).toString(),
        },
        this.#io(),
      );
    } catch (error) {
      throw new AgoraError('PEER_FAILURE', `token endpoint ${url}: ${(error as Error).message}`, { cause: error });
    }
    if (typeof body.access_token !== 'string' || body.access_token === '')
      throw new AgoraError('PEER_FAILURE', `token endpoint ${url}: no access_token in its reply`);
    const lifetimeMs =
      typeof body.expires_in === 'number' && body.expires_in > 0
        ? body.expires_in * 1000
        : CLIENT_CREDENTIALS_DEFAULTS.assumedLifetimeMs;
    const renewBefore = Math.min(
      this.#options.renewBeforeMs ?? CLIENT_CREDENTIALS_DEFAULTS.renewBeforeMs,
      lifetimeMs / 2,
    );
    const max = this.#options.maxResources ?? CLIENT_CREDENTIALS_DEFAULTS.maxResources;
    if (!this.#held.has(key) && this.#held.size >= max) this.#held.delete(this.#held.keys().next().value as string);
    this.#held.delete(key);
    this.#held.set(key, { token: body.access_token, renewAt: started + lifetimeMs - renewBefore });
    return body.access_token;
  }

  // The token endpoint, discovered once; a failed discovery is tried again by the next request.
  #endpoint(): Promise<string> {
    this.#tokenUrl ??= discoverAuthorizationServer(this.#options.issuer as string, this.#io()).then(
      ({ tokenEndpoint, url }) => {
        if (tokenEndpoint === undefined) throw new AgoraError('PEER_FAILURE', `${url} names no token_endpoint`);
        return tokenEndpoint;
      },
    );
    const found = this.#tokenUrl;
    found.catch(() => {
      if (this.#tokenUrl === found) this.#tokenUrl = undefined;
    });
    return found;
  }

  #io() {
    return {
      timeoutMs: this.#options.timeoutMs ?? CLIENT_CREDENTIALS_DEFAULTS.timeoutMs,
      ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
    };
  }
}

/**
 * A `fetch` that adds `Authorization: Bearer <token>` from `source` to requests for `origin` (and only those), for a
 * peer's own SDK whose requests do not go through the one client.
 */
export function bearerFetch(fetchImpl: typeof fetch, source: TokenSource, origin: string): typeof fetch {
  const home = new URL(origin).origin;
  return async (input, init = {}) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (new URL(url).origin !== home) return fetchImpl(input, init);
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
    headers.set('authorization', `Bearer ${await source.token(url)}`);
    return fetchImpl(input, { ...init, headers });
  };
}

function basic(id: string, secret: string): string {
  return Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64');
}
