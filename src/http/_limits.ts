// Internal: who may call (bearer tokens) and how often (a fixed-window rate limit per client or IPv6 /64).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Redis } from '../_redis.js';

function sha256(value: string): Buffer {
  return createHash('sha256').update(value).digest();
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

  /** Whether an `Authorization` header carries one of the tokens. */
  accepts(header: string | undefined): boolean {
    const match = header === undefined ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
    const digest = sha256(match?.[1] ?? '');
    let ok = false;
    // No early exit: the time taken does not say which token, if any, matched.
    for (const token of this.#digests) ok = timingSafeEqual(digest, token) || ok;
    return ok && match !== null;
  }
}

/** What a rate limit needs: a window, a maximum, and optionally a Redis connection to share the counts on. */
export type RateLimitOptions = { windowMs: number; max: number; redis?: Redis; prefix?: string };

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
 * At most `max` requests per client per window, counted by `rate-limiter-flexible`: in this process's memory, or
 * in Redis when given a connection, so every process of an agent shares one count per client. A client's window
 * lives until it ends: no number of other clients can push it out. When Redis is unreachable, counting falls back
 * to this process's memory rather than refusing or letting everyone through.
 */
export class RateLimiter {
  readonly #limiter: Promise<Limiter>;

  constructor(options: RateLimitOptions) {
    // Loaded on demand: the library's index pulls in every backend (~0.1 s), which an agent without a limit never needs.
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

  /** Seconds until the client may retry, or 0 when this request is allowed. */
  async hit(address: string | undefined): Promise<number> {
    const limiter = await this.#limiter;
    try {
      await limiter.consume(clientKey(address));
      return 0;
    } catch (rejection) {
      if (rejection instanceof Error) throw rejection;
      const { msBeforeNext } = rejection as { msBeforeNext: number };
      return Math.max(1, Math.ceil(msBeforeNext / 1000));
    }
  }
}

/** The edge's rate limit as one function shared by the Agora routes and the faces: seconds to wait, or 0 to go on. */
export function rateLimitOf(options: { rateLimit?: RateLimitOptions }): ((client: string | undefined) => Promise<number>) | undefined {
  if (!options.rateLimit) return undefined;
  const limiter = new RateLimiter(options.rateLimit);
  return (client) => limiter.hit(client);
}
