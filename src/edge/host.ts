// The Host rule against DNS rebinding: a page whose own name an attacker points at this machine sends same-origin
// requests that name the attacker's host. A server that asks no credential answers only the names it serves; any other
// `Host` is a misdirected request (421, RFC 9110 §7.4) on every mount.
import { isIP } from 'node:net';

/** Options of {@link hostRule}. */
export type HostRuleOptions = {
  /**
   * Host names this server answers to beside loopback and IP addresses (`--allowed-host`): `agent.example`, or with a
   * port `agent.example:8443`; `*` turns the rule off. When given, the rule holds even with tokens set.
   */
  allowedHosts?: readonly string[] | undefined;
  /** The public base URL (`--public-url`): its host is served. */
  publicUrl?: string | undefined;
  /** Whether every route that is not public needs a credential (a token): a stranger's page then gains nothing. */
  credentialsRequired?: boolean;
};

/** The name and port of a `Host` value (`[::1]:80` → `::1`, `80`), lower-cased; undefined when it is malformed. */
export function splitHost(host: string): { name: string; port: string | undefined } | undefined {
  const value = host.trim().toLowerCase();
  const bracketed = /^\[([0-9a-f:.]+)\](?::(\d{1,5}))?$/.exec(value);
  if (bracketed) return { name: bracketed[1]!, port: bracketed[2] };
  const named = /^([a-z0-9._-]+)(?::(\d{1,5}))?$/.exec(value);
  if (named) return { name: named[1]!.replace(/\.$/, ''), port: named[2] };
  return undefined;
}

/** Whether a host name (no port) is this machine's by its very spelling: `localhost`, 127.0.0.0/8 or `::1`. */
export function isLoopbackName(name: string): boolean {
  const lower = name.toLowerCase();
  if (lower === 'localhost' || lower === '::1') return true;
  const bare = lower.startsWith('::ffff:') ? lower.slice(7) : lower;
  return isIP(bare) === 4 && bare.startsWith('127.');
}

/** Whether a Host header names this machine: `localhost`, a 127/8 address or `[::1]`, with any port. */
export function isLoopbackHost(host: string | undefined): boolean {
  const parts = host === undefined ? undefined : splitHost(host);
  return parts !== undefined && isLoopbackName(parts.name);
}

/**
 * Which `Host` values a server answers: undefined when any (a credential is required and no `allowedHosts` given, or
 * `allowedHosts` holds `*`), else a test that takes loopback names, IP addresses (a page can only send one as the
 * Host when it was loaded from that address: nothing to rebind), the public URL's host and the allowed hosts. A
 * request without a Host (HTTP/1.0, an in-process call) is not a browser's and passes.
 * @example hostRule({ publicUrl: 'https://agent.example' })?.('rebind.attacker.example') // false
 */
export function hostRule(options: HostRuleOptions): ((host: string | undefined) => boolean) | undefined {
  const given = (options.allowedHosts ?? []).map((host) => host.trim().toLowerCase()).filter((host) => host !== '');
  if (given.includes('*')) return undefined;
  if (given.length === 0 && options.credentialsRequired === true) return undefined;
  const names = new Set<string>();
  const exact = new Set<string>();
  for (const host of given) {
    const parts = splitHost(host);
    if (parts === undefined) continue;
    if (parts.port === undefined) names.add(parts.name);
    else exact.add(`${parts.name}:${parts.port}`);
  }
  if (options.publicUrl !== undefined && URL.canParse(options.publicUrl)) {
    const url = new URL(options.publicUrl);
    names.add(url.hostname.replace(/^\[|\]$/g, '').toLowerCase());
  }
  // The hot path asks the same few Host values again and again: their verdicts are kept (a bounded number).
  const verdicts = new Map<string, boolean>();
  return (host) => {
    if (host === undefined) return true;
    const kept = verdicts.get(host);
    if (kept !== undefined) return kept;
    const parts = splitHost(host);
    const allowed =
      parts !== undefined &&
      (isLoopbackName(parts.name) ||
        isIP(parts.name) !== 0 ||
        names.has(parts.name) ||
        (parts.port !== undefined && exact.has(`${parts.name}:${parts.port}`)));
    if (verdicts.size < 64) verdicts.set(host, allowed);
    return allowed;
  };
}

/** The words of a 421: which host was refused (its first 100 characters) and how to serve it. */
export function misdirected(host: string): string {
  const name = JSON.stringify(host.slice(0, 100));
  return `Misdirected request: this server does not answer for host ${name} (allow it with --allowed-host)`;
}
