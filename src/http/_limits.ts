// Internal: who may call (bearer tokens) and how often (a fixed-window rate limit per client).
import { createHash, timingSafeEqual } from 'node:crypto';

const MAX_RATE_LIMITED_CLIENTS = 10_000;

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

/** At most `max` requests per client per window; Map order is window-start order, so the oldest are evicted first. */
export class RateLimiter {
  private readonly clients = new Map<string, { count: number; resetAt: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly max: number,
    private readonly now: () => number,
  ) {}

  /** Seconds until the client may retry, or 0 when this request is allowed. */
  hit(client: string): number {
    const now = this.now();
    let entry = this.clients.get(client);
    if (entry === undefined || entry.resetAt <= now) {
      if (entry !== undefined) this.clients.delete(client);
      else if (this.clients.size >= MAX_RATE_LIMITED_CLIENTS) this.evict(now);
      entry = { count: 0, resetAt: now + this.windowMs };
      this.clients.set(client, entry);
    }
    entry.count += 1;
    return entry.count > this.max ? Math.max(1, Math.ceil((entry.resetAt - now) / 1000)) : 0;
  }

  private evict(now: number): void {
    for (const [client, entry] of this.clients) {
      if (entry.resetAt > now && this.clients.size < MAX_RATE_LIMITED_CLIENTS) break;
      this.clients.delete(client);
    }
  }
}

/** The edge's rate limit as one function shared by the Agora routes and the faces: seconds to wait, or 0 to go on. */
export function rateLimitOf(options: { rateLimit?: { windowMs: number; max: number }; now?: () => number }): ((client: string) => number) | undefined {
  if (!options.rateLimit) return undefined;
  const limiter = new RateLimiter(options.rateLimit.windowMs, options.rateLimit.max, options.now ?? Date.now);
  return (client) => limiter.hit(client);
}
