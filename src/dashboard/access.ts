// Who may see and act on a dashboard: without a token, only on a server bound to loopback and read-only; beyond
// loopback a token is needed to show anything; approving or rejecting always needs one. The token is checked by the
// edge's one check; the edge's guard (rate limit, Host rule against DNS rebinding, cross-site rule) has run before.
import { TokenCheck } from '../edge/guard.js';
import { isLoopbackName } from '../edge/host.js';
import type { EdgeRequest } from '../edge/request.js';

/** What a request wants to do: load the page or its assets, read data, or change something. */
export type AccessKind = 'page' | 'read' | 'write';

/** Why a request is refused, or undefined when it may go on. */
export type Refusal = { status: 401 | 403; message: string } | undefined;

/** How tokens are set on a server started by the CLI (the default advice of the messages below). */
export const CLI_TOKEN_ADVICE = 'start it with --token <secret> (AGORA_TOKENS)';

/** How tokens are set on an agent mounted with `agoraRouter` (the advice its dashboard gives). */
export const ROUTER_TOKEN_ADVICE = "pass agoraRouter(receiver, { tokens: ['<secret>'] })";

/** The message of a dashboard turned off for want of a token, with the advice of how to set one. */
export function needsToken(advice: string = CLI_TOKEN_ADVICE): string {
  return `Dashboard off: this server listens beyond loopback and has no token. To use it, ${advice}, or listen on 127.0.0.1.`;
}

/** The message of a dashboard turned off for want of a token, for a server started by the CLI. */
export const NEEDS_TOKEN = needsToken();

/** The message of an approval or rejection on a server without a token, with the advice of how to set one. */
export function reviewNeedsToken(advice: string = CLI_TOKEN_ADVICE): string {
  return `Approving or rejecting a routine needs a token: ${advice}, then sign in.`;
}

/** The message of an approval or rejection on a server without a token, for a server started by the CLI. */
export const REVIEW_NEEDS_TOKEN = reviewNeedsToken();

/**
 * Whether the server that took this request listens on loopback only, judged by the address it is bound to (a
 * server on 0.0.0.0 is reachable from other machines, whoever asks); a Unix socket (a path) is this machine's.
 */
export function listensOnLoopback(request: Pick<EdgeRequest, 'boundAddress'>): boolean {
  const bound = request.boundAddress;
  if (bound === undefined) return false;
  return bound.startsWith('/') || isLoopbackName(bound);
}

/** The dashboard's token rules (see the file's head); the page itself (the sign-in form) needs no token. */
export class DashboardAccess {
  readonly #tokens: TokenCheck;
  readonly #advice: string;

  readonly #oauth: boolean;

  /**
   * `advice` says how tokens are set where this dashboard runs (default: the CLI's `--token`); with `oauth`, the
   * edge's guard has checked an access token and set the request's principal and grants.
   */
  constructor(tokens: readonly string[] = [], advice: string = CLI_TOKEN_ADVICE, oauth = false) {
    this.#tokens = new TokenCheck(tokens);
    this.#advice = advice;
    this.#oauth = oauth;
  }

  /** Whether tokens are set (the page then asks for one): static ones, or an authorization server's. */
  get tokensEnabled(): boolean {
    return this.#tokens.enabled || this.#oauth;
  }

  /** Why this request may not do `kind`, or undefined. */
  check(request: Pick<EdgeRequest, 'headers' | 'boundAddress' | 'principal' | 'grants'>, kind: AccessKind): Refusal {
    if (!this.tokensEnabled) {
      // A page that points its own name at 127.0.0.1 (DNS rebinding) was answered 421 by the edge's Host rule.
      if (!listensOnLoopback(request)) return { status: 403, message: needsToken(this.#advice) };
      return kind === 'write' ? { status: 403, message: reviewNeedsToken(this.#advice) } : undefined;
    }
    if (kind === 'page') return undefined;
    // An access token the edge verified: its scopes decide (reading needs `read`, approving `admin`).
    if (this.#oauth && request.grants !== undefined)
      return request.grants.has(kind === 'write' ? 'admin' : 'read')
        ? undefined
        : { status: 403, message: 'Insufficient scope' };
    return this.#tokens.enabled && this.#tokens.accepts(request.headers.authorization)
      ? undefined
      : { status: 401, message: "Unauthorized: sign in with the agent's token" };
  }
}
