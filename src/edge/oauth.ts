// The edge as an OAuth 2.1 resource server, beside static tokens: JWT access tokens from one issuer, verified with
// `jose` against the issuer's published keys (found by RFC 8414 / OpenID Connect discovery), for one audience (this
// server's resource URL, RFC 8707), with the scopes each kind of request needs; and the Protected Resource Metadata
// (RFC 9728) a client reads to find where to get a token. `jose` is loaded when the first token is verified.
import { createHash } from 'node:crypto';
import { AgoraError } from '../errors.js';
import { discoverAuthorizationServer, type AuthorizationServerMetadata } from '../net/authorization-server.js';
import { JSON_TYPE, type EdgeResponse } from './response.js';

/** The kinds of request a scope can be asked for: reading, querying (a turn on any face), administering. */
export type AccessKind = 'read' | 'query' | 'admin';

/** The kinds, in order. */
export const ACCESS_KINDS: readonly AccessKind[] = ['read', 'query', 'admin'];

/** Settings of {@link OAuthResource}; durations in ms. */
export type OAuthOptions = {
  /** The authorization server's issuer identifier (`https://login.example.com/realms/agents`). */
  issuer: string;
  /** This server's resource URL, the `aud` its tokens must carry (the agent's public URL). */
  audience: string;
  /** The scopes each kind of request needs (every one listed); a kind not listed needs none beyond a valid token. */
  scopes?: Partial<Record<AccessKind, readonly string[]>>;
  /** Signature algorithms accepted (default: the asymmetric ones); `none` and HS* are never accepted. */
  algorithms?: readonly string[];
  /** Leeway on `exp` and `nbf` (default 30 s). */
  clockToleranceMs?: number;
  /** Least time between two fetches of the key set for a token whose key is unknown (default 30 s). */
  jwksCooldownMs?: number;
  /** How long a fetched key set is used before it is fetched again (default 10 min). */
  jwksMaxAgeMs?: number;
  /** Time allowed to fetch the discovery document or the keys (default 5 s). */
  timeoutMs?: number;
  /** Wait after a failed discovery before the next try (default 30 s); tokens meanwhile get 503. */
  retryMs?: number;
  /** Longest token looked at, in characters (default 8192); longer ones are refused unread. */
  maxTokenChars?: number;
  /** The fetch used for discovery and keys (default the global one). */
  fetch?: typeof fetch;
};

/** The defaults of {@link OAuthOptions}. */
export const OAUTH_DEFAULTS = {
  algorithms: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'],
  clockToleranceMs: 30_000,
  jwksCooldownMs: 30_000,
  jwksMaxAgeMs: 600_000,
  timeoutMs: 5_000,
  retryMs: 30_000,
  maxTokenChars: 8192,
} as const;

/** The path of the Protected Resource Metadata (RFC 9728 §3). */
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

/** A caller a token names: its principal (`oauth:<sub>`) and the kinds of request its scopes allow. */
export type Verified = { principal: string; grants: ReadonlySet<AccessKind> };

/** How the edge checks bearer tokens its static list does not hold: the hook the guard calls. */
export interface BearerVerifier {
  /** The caller a token names; rejects with an `AgoraError` (`UNAUTHORIZED`, or `STORE_UNAVAILABLE` when the issuer is down). */
  verify(token: string): Promise<Verified>;
  /** The `WWW-Authenticate` value of a refusal: no token, a bad one, or one without the scopes `kind` needs. */
  challenge(error?: 'invalid_token' | 'insufficient_scope', kind?: AccessKind): string;
  /** The Protected Resource Metadata, as a response. */
  metadata(): EdgeResponse;
  /** What cards say of it: the metadata's URL, the issuer, the scopes, the token endpoint once discovered. */
  describe(): Promise<AuthDescription>;
}

/** How a card describes the OAuth scheme of an agent or hub. */
export type AuthDescription = {
  resourceMetadata: string;
  issuer: string;
  scopes: Partial<Record<AccessKind, readonly string[]>>;
  tokenEndpoint?: string;
  /** The authorization server's metadata document, once discovered. */
  serverMetadata?: string;
};

const ASYMMETRIC = /^(?:RS|PS|ES)(?:256|384|512)$|^EdDSA$|^Ed25519$|^ES256K$/;
// Tokens verified lately, by digest, until they expire: a client sends the same token on every request, and a
// signature check costs ~0.5 ms. Bounded; the oldest goes first.
const MAX_VERIFIED = 1024;

type Jose = typeof import('jose');
type Keys = ReturnType<Jose['createRemoteJWKSet']>;

/** The OAuth resource server of one agent or hub: verifies tokens and describes itself (RFC 9728). */
export class OAuthResource implements BearerVerifier {
  readonly issuer: string;
  readonly audience: string;
  readonly #audiences: string[];
  readonly #scopes: Partial<Record<AccessKind, readonly string[]>>;
  readonly #algorithms: string[];
  readonly #options: Required<Omit<OAuthOptions, 'issuer' | 'audience' | 'scopes' | 'algorithms' | 'fetch'>>;
  readonly #fetch: typeof fetch;
  readonly #metadataUrl: string;
  #keys: Promise<{ jose: Jose; keys: Keys }> | undefined;
  #tokenEndpoint: string | undefined;
  readonly #verified = new Map<string, { caller: Verified; expiresAt: number }>();
  #serverMetadata: string | undefined;
  #failedAt = -Infinity;

  constructor(options: OAuthOptions) {
    httpUrl(options.issuer, 'issuer');
    // Compared as given (RFC 8414 §3.3): the discovery document must name exactly this issuer.
    this.issuer = options.issuer;
    this.audience = httpUrl(options.audience, 'audience').href;
    // `https://agent.example` and `https://agent.example/` name one resource; clients send either.
    this.#audiences = [...new Set([this.audience, this.audience.replace(/\/$/, ''), options.audience])];
    this.#scopes = options.scopes ?? {};
    this.#algorithms = [...(options.algorithms ?? OAUTH_DEFAULTS.algorithms)];
    const weak = this.#algorithms.find((algorithm) => !ASYMMETRIC.test(algorithm));
    if (weak !== undefined)
      throw new AgoraError('INVALID_ARGUMENT', `OAuth: algorithm ${weak} is not an asymmetric signature`);
    this.#options = {
      clockToleranceMs: options.clockToleranceMs ?? OAUTH_DEFAULTS.clockToleranceMs,
      jwksCooldownMs: options.jwksCooldownMs ?? OAUTH_DEFAULTS.jwksCooldownMs,
      jwksMaxAgeMs: options.jwksMaxAgeMs ?? OAUTH_DEFAULTS.jwksMaxAgeMs,
      timeoutMs: options.timeoutMs ?? OAUTH_DEFAULTS.timeoutMs,
      retryMs: options.retryMs ?? OAUTH_DEFAULTS.retryMs,
      maxTokenChars: options.maxTokenChars ?? OAUTH_DEFAULTS.maxTokenChars,
    };
    this.#fetch = options.fetch ?? fetch;
    const resource = new URL(this.audience);
    this.#metadataUrl = `${resource.origin}${RESOURCE_METADATA_PATH}${resource.pathname === '/' ? '' : resource.pathname}`;
  }

  /** Every scope some kind of request needs. */
  get scopesSupported(): string[] {
    return [...new Set(ACCESS_KINDS.flatMap((kind) => this.#scopes[kind] ?? []))];
  }

  async verify(token: string): Promise<Verified> {
    if (token.length > this.#options.maxTokenChars) throw new AgoraError('UNAUTHORIZED', 'Token too long');
    const digest = createHash('sha256').update(token).digest('base64url');
    const known = this.#verified.get(digest);
    if (known !== undefined && Date.now() < known.expiresAt) return known.caller;
    if (known !== undefined) this.#verified.delete(digest);
    const { jose, keys } = await this.#load();
    let payload: import('jose').JWTPayload;
    try {
      ({ payload } = await jose.jwtVerify(token, keys, {
        issuer: this.issuer,
        audience: this.#audiences,
        algorithms: this.#algorithms,
        clockTolerance: Math.round(this.#options.clockToleranceMs / 1000),
        requiredClaims: ['exp'],
      }));
    } catch (error) {
      throw new AgoraError('UNAUTHORIZED', `Invalid token: ${reason(error)}`);
    }
    const subject = typeof payload.sub === 'string' ? payload.sub : clientOf(payload);
    if (subject === undefined) throw new AgoraError('UNAUTHORIZED', 'Invalid token: no subject');
    const scopes = scopesOf(payload);
    const grants = new Set<AccessKind>();
    for (const kind of ACCESS_KINDS)
      if ((this.#scopes[kind] ?? []).every((scope) => scopes.has(scope))) grants.add(kind);
    const caller = { principal: `oauth:${subject}`, grants };
    if (this.#verified.size >= MAX_VERIFIED) this.#verified.delete(this.#verified.keys().next().value as string);
    this.#verified.set(digest, { caller, expiresAt: (payload.exp as number) * 1000 });
    return caller;
  }

  challenge(error?: 'invalid_token' | 'insufficient_scope', kind?: AccessKind): string {
    const parts = [`resource_metadata="${this.#metadataUrl}"`];
    if (error !== undefined) parts.unshift(`error="${error}"`);
    const scopes = kind === undefined ? [] : (this.#scopes[kind] ?? []);
    if (scopes.length > 0) parts.push(`scope="${scopes.join(' ')}"`);
    return `Bearer ${parts.join(', ')}`;
  }

  metadata(): EdgeResponse {
    const body = JSON.stringify({
      resource: this.audience,
      authorization_servers: [this.issuer],
      scopes_supported: this.scopesSupported,
      bearer_methods_supported: ['header'],
      resource_signing_alg_values_supported: this.#algorithms,
    });
    return {
      status: 200,
      headers: {
        'content-type': JSON_TYPE,
        'content-length': String(Buffer.byteLength(body)),
        'cache-control': 'public, max-age=300',
      },
      body,
    };
  }

  async describe(): Promise<AuthDescription> {
    await this.#load().catch(() => undefined);
    const { issuer } = this;
    const token = this.#tokenEndpoint === undefined ? {} : { tokenEndpoint: this.#tokenEndpoint };
    const server = this.#serverMetadata === undefined ? {} : { serverMetadata: this.#serverMetadata };
    return { resourceMetadata: this.#metadataUrl, issuer, scopes: this.#scopes, ...token, ...server };
  }

  // The issuer's keys: discovered once; a failed discovery is tried again after `retryMs`, never on every request.
  #load(): Promise<{ jose: Jose; keys: Keys }> {
    if (this.#keys === undefined && Date.now() - this.#failedAt >= this.#options.retryMs) {
      this.#keys = Promise.all([import('jose'), this.#discover()]).then(([jose, jwksUri]) => ({
        jose,
        keys: jose.createRemoteJWKSet(new URL(jwksUri), {
          cooldownDuration: this.#options.jwksCooldownMs,
          cacheMaxAge: this.#options.jwksMaxAgeMs,
          timeoutDuration: this.#options.timeoutMs,
        }),
      }));
      this.#keys.catch(() => {
        this.#keys = undefined;
        this.#failedAt = Date.now();
      });
    }
    return this.#keys ?? Promise.reject(new AgoraError('STORE_UNAVAILABLE', 'Authorization server unavailable'));
  }

  // The issuer's metadata (net/authorization-server.ts: RFC 8414, then OpenID Connect), which must name its keys.
  async #discover(): Promise<string> {
    let found: AuthorizationServerMetadata;
    try {
      found = await discoverAuthorizationServer(this.issuer, {
        fetch: this.#fetch,
        timeoutMs: this.#options.timeoutMs,
      });
    } catch (error) {
      throw new AgoraError('STORE_UNAVAILABLE', `Authorization server unavailable (${(error as Error).message})`);
    }
    if (found.jwksUri === undefined)
      throw new AgoraError('STORE_UNAVAILABLE', `Authorization server unavailable (${found.url} has no jwks_uri)`);
    if (found.tokenEndpoint !== undefined) this.#tokenEndpoint = found.tokenEndpoint;
    this.#serverMetadata = found.url;
    return httpUrl(found.jwksUri, 'jwks_uri').href;
  }
}

function httpUrl(value: string, name: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new AgoraError('INVALID_ARGUMENT', `OAuth: ${name} is not a URL: ${value.slice(0, 200)}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new AgoraError('INVALID_ARGUMENT', `OAuth: ${name} must be an http(s) URL: ${value.slice(0, 200)}`);
  return url;
}

// Client-credentials tokens of some servers carry no `sub`: the client is then the caller.
function clientOf(payload: Record<string, unknown>): string | undefined {
  const client = payload.client_id ?? payload.azp;
  return typeof client === 'string' ? client : undefined;
}

// `scope` (RFC 9068, space-separated) or `scp` (Okta: an array; Entra: a space-separated string).
function scopesOf(payload: Record<string, unknown>): Set<string> {
  const scopes = new Set<string>();
  for (const claim of [payload.scope, payload.scp]) {
    if (typeof claim === 'string') for (const scope of claim.split(' ')) if (scope) scopes.add(scope);
    if (Array.isArray(claim)) for (const scope of claim) if (typeof scope === 'string') scopes.add(scope);
  }
  return scopes;
}

// What jose says (never the token): the failed check, `"exp" claim timestamp check failed`.
function reason(error: unknown): string {
  return error instanceof Error ? error.message.slice(0, 200) : 'unreadable';
}
