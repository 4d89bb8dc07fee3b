// Access tokens for the clients, by OAuth 2.1's client-credentials grant: the token endpoint given, or found by
// RFC 8414 / OpenID Connect discovery from the issuer; a token is kept until shortly before it expires, then renewed
// (one request at a time, however many callers wait).
import { AgoraError } from '../errors.js';

/** Where a client's bearer token comes from: a fixed string, or a source asked before each request. */
export interface TokenSource {
  /** A token valid now (renewed when close to expiry). */
  token(): Promise<string>;
}

/** Options of {@link ClientCredentials}; durations in ms. */
export type ClientCredentialsOptions = {
  clientId: string;
  clientSecret: string;
  /** The token endpoint; without it, discovered from `issuer`. */
  tokenUrl?: string | undefined;
  issuer?: string | undefined;
  /** The resource the token is for (RFC 8707: the agent's or hub's URL, its audience). */
  resource?: string | undefined;
  /** Space-separated scopes asked for. */
  scope?: string | undefined;
  /** Renew this long before expiry (default 60 s). */
  renewBeforeMs?: number;
  /** Bound on each request to the authorization server (default 10 s). */
  timeoutMs?: number;
  fetch?: typeof fetch;
  now?: () => number;
};

const MAX_REPLY_BYTES = 256 * 1024;

/** A {@link TokenSource} by the client-credentials grant. */
export class ClientCredentials implements TokenSource {
  readonly #options: ClientCredentialsOptions;
  readonly #fetch: typeof fetch;
  readonly #now: () => number;
  #current: { token: string; renewAt: number } | undefined;
  #pending: Promise<string> | undefined;
  #tokenUrl: string | undefined;

  constructor(options: ClientCredentialsOptions) {
    if (options.tokenUrl === undefined && options.issuer === undefined)
      throw new AgoraError('INVALID_ARGUMENT', 'client credentials: give a token URL or an issuer to discover it from');
    this.#options = options;
    this.#tokenUrl = options.tokenUrl;
    this.#fetch = options.fetch ?? fetch;
    this.#now = options.now ?? Date.now;
  }

  token(): Promise<string> {
    if (this.#current !== undefined && this.#now() < this.#current.renewAt) return Promise.resolve(this.#current.token);
    this.#pending ??= this.#request().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  async #request(): Promise<string> {
    const url = this.#tokenUrl ?? (this.#tokenUrl = await this.#discover());
    const { clientId, clientSecret, resource, scope } = this.#options;
    const started = this.#now();
    const body = await this.#json(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        // RFC 6749 §2.3.1: the id and secret form-encoded, then Basic.
        authorization: `Basic ${basic(clientId, clientSecret)}`,
      },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        ...(resource ? { resource } : {}),
        ...(scope ? { scope } : {}),
      }).toString(),
    });
    if (typeof body.access_token !== 'string' || body.access_token === '')
      throw new AgoraError('PEER_FAILURE', `token endpoint ${url}: ${String(body.error ?? 'no access_token')}`);
    const lifetimeMs = typeof body.expires_in === 'number' ? body.expires_in * 1000 : 300_000;
    const renewBefore = Math.min(this.#options.renewBeforeMs ?? 60_000, lifetimeMs / 2);
    this.#current = { token: body.access_token, renewAt: started + lifetimeMs - renewBefore };
    return body.access_token;
  }

  async #discover(): Promise<string> {
    const issuer = new URL(this.#options.issuer as string);
    const path = issuer.pathname === '/' ? '' : issuer.pathname.replace(/\/$/, '');
    for (const url of [
      `${issuer.origin}/.well-known/oauth-authorization-server${path}`,
      `${issuer.origin}${path}/.well-known/openid-configuration`,
    ]) {
      const document = await this.#json(url, { method: 'GET' }).catch(() => undefined);
      if (typeof document?.token_endpoint === 'string') return document.token_endpoint;
    }
    throw new AgoraError('PEER_FAILURE', `no token endpoint found for issuer ${this.#options.issuer}`);
  }

  async #json(url: string, init: RequestInit): Promise<Record<string, unknown>> {
    const response = await this.#fetch(url, {
      ...init,
      redirect: 'error',
      signal: AbortSignal.timeout(this.#options.timeoutMs ?? 10_000),
    });
    const text = await response.text();
    if (text.length > MAX_REPLY_BYTES) throw new AgoraError('PEER_FAILURE', `${url}: reply too large`);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new AgoraError('PEER_FAILURE', `${url}: status ${response.status}, not a JSON object`);
    const body = value as Record<string, unknown>;
    if (!response.ok)
      throw new AgoraError('PEER_FAILURE', `${url}: status ${response.status} ${String(body.error ?? '')}`);
    return body;
  }
}

function basic(id: string, secret: string): string {
  return Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64');
}
