// The guard every request and upgrade of every mount passes: who may call (bearer tokens, one constant-time check),
// how often (a rate limit per principal, else per address or IPv6 /64), and from where (the cross-site rule).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RedisClient } from '../_redis.js';

function sha256(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** The token of an `Authorization: Bearer <token>` header (its first value), undefined without one: the one parser. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  return value === undefined ? undefined : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(value)?.[1];
}

/** Checks `Authorization: Bearer <token>` against a list of tokens, in constant time. */
export class TokenCheck {
  // Digests make every comparison the same length, so timingSafeEqual leaks neither content nor length.
  readonly #digests: Buffer[];

  constructor(tokens: readonly string[]) {
    this.#digests = tokens.map(sha256);
  }

  /** Whether any token is required at all. */
  get enabled(): boolean {
    return this.#digests.length > 0;
  }

  /** Whether an `Authorization` header (or its values) carries one of the tokens. */
  accepts(header: string | string[] | undefined): boolean {
    return this.acceptsToken(bearerToken(header));
  }

  /** Whether a bare token (a WebSocket's `?token=`, a stdio client's setting) is one of the tokens. */
  acceptsToken(token: string | undefined): boolean {
    const digest = sha256(token ?? '');
    let ok = false;
    // No early exit: the time taken does not say which token, if any, matched.
    for (const candidate of this.#digests) ok = timingSafeEqual(digest, candidate) || ok;
    return ok && token !== undefined;
  }
}

/** What a rate limit needs: a window, a maximum, and optionally a Redis connection to share the counts on. */
export type RateLimitOptions = { windowMs: number; max: number; redis?: RedisClient; prefix?: string };

type Limiter = { consume(key: string): Promise<unknown> };

/**
 * The client a request is counted against: its address, or its /64 for IPv6 (one subscriber is handed a whole
 * /64, so counting single IPv6 addresses would give each client an unlimited supply). IPv4-mapped IPv6
 * addresses count as their IPv4 address.
 */
export function clientKey(address: string | undefined): string {
  if (address === undefined || address === '') return '';
  if (!address.includes(':')) return address;
  const lower = address.toLowerCase();
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(lower);
  if (mapped) return mapped[1] as string;
  const zone = lower.indexOf('%');
  const bare = zone === -1 ? lower : lower.slice(0, zone);
  const [head = '', tail] = bare.split('::', 2);
  const groups = head === '' ? [] : head.split(':');
  if (tail !== undefined && groups.length < 4) {
    const tailGroups = tail === '' ? [] : tail.split(':');
    const missing = 8 - groups.length - tailGroups.length;
    for (let index = 0; index < missing; index++) groups.push('0');
    groups.push(...tailGroups);
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}

/**
 * The client a request is counted against for rate limits and quotas: its verified principal when it has one (an
 * access token's subject, a static token's digest: the same caller on any address, and two callers behind one NAT
 * apart), else its address ({@link clientKey}).
 */
export function callerKey(address: string | undefined, principal?: string | undefined): string {
  if (principal === undefined || principal === '') return clientKey(address);
  // A digest: a principal is any text an issuer put in `sub`, and keys go to Redis.
  return `principal:${createHash('sha256').update(principal).digest('base64url').slice(0, 22)}`;
}

/**
 * At most `max` requests per client per window, counted by `rate-limiter-flexible`: in this process's memory, or
 * in Redis when given a connection, so every process of an agent shares one count per client. A client's window
 * lives until it ends: no number of other clients can push it out. When Redis is unreachable, counting falls back
 * to this process's memory rather than refusing or letting everyone through.
 */
export class RateLimiter {
  readonly #limiter: Promise<Limiter>;

  constructor(options: RateLimitOptions) {
    // Loaded on demand: the library's index pulls in every backend (~0.1 s), which an agent without a limit never
    // needs.
    this.#limiter = import('rate-limiter-flexible').then(({ RateLimiterMemory, RateLimiterRedis }) => {
      const memory = new RateLimiterMemory({ points: options.max, duration: options.windowMs / 1000 });
      if (!options.redis) return memory;
      return new RateLimiterRedis({
        storeClient: options.redis,
        keyPrefix: `${options.prefix ?? 'agora:'}ratelimit`,
        points: options.max,
        // Redis expiries are whole seconds.
        duration: Math.max(1, Math.ceil(options.windowMs / 1000)),
        rejectIfRedisNotReady: true,
        insuranceLimiter: memory,
      });
    });
    // A failed import surfaces on the first request; never as an unhandled rejection.
    this.#limiter.catch(() => undefined);
  }

  /** Seconds until the client (its principal, else its address) may retry, or 0 when this request is allowed. */
  async hit(address: string | undefined, principal?: string | undefined): Promise<number> {
    const limiter = await this.#limiter;
    try {
      await limiter.consume(callerKey(address, principal));
      return 0;
    } catch (rejection) {
      if (rejection instanceof Error) throw rejection;
      const { msBeforeNext } = rejection as { msBeforeNext: number };
      return Math.max(1, Math.ceil(msBeforeNext / 1000));
    }
  }
}

/**
 * Whether a request is refused by the cross-site rule: a state-changing request (anything but GET, HEAD and OPTIONS;
 * every WebSocket upgrade) that says it comes from a web page of another site (`Sec-Fetch-Site: cross-site`) or
 * carries an `Origin` that is not this server's, unless the operator allowed that origin. Requests with no `Origin`
 * (curl, SDKs, agents) pass: only browsers send one, and a page cannot leave it out.
 */
export function isCrossSite(
  method: string,
  headers: Record<string, string | string[] | undefined>,
  allowed: ReadonlySet<string>,
  upgrade = false,
): boolean {
  if (!upgrade && (method === 'GET' || method === 'HEAD' || method === 'OPTIONS')) return false;
  const origin = first(headers.origin);
  if (origin !== undefined) {
    if (allowed.has(origin) || allowed.has('*')) return false;
    return !sameOrigin(origin, first(headers.host), allowed);
  }
  return first(headers['sec-fetch-site']) === 'cross-site';
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

// An Origin names this server when its host[:port] is the Host the request was sent to (a proxy in front keeps the
// Host) or the host of an allowed origin's own server. `null` (a sandboxed frame, a file) is nobody's.
function sameOrigin(origin: string, host: string | undefined, allowed: ReadonlySet<string>): boolean {
  if (host === undefined) return false;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  const wanted = host.toLowerCase();
  return (
    url.host === wanted ||
    (url.port === '' && wanted === `${url.hostname}:${url.protocol === 'https:' ? 443 : 80}`) ||
    allowed.has(url.origin)
  );
}
