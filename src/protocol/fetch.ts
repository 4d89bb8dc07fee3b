// Fetching one http(s) protocol source on the one outbound client, behind its SSRF guard: vetted addresses, a pinned
// connection, every redirect vetted afresh, one clock over the whole chain, a size cap.
import { AgoraError, isAgoraError } from '../errors.js';
import { HttpClient } from '../net/client.js';
import type { ResolvedAddress } from '../net/guard.js';

/** How protocol sources are read (spec §3); every field has a safe default for a receiver on the internet. */
export type SourceOptions = {
  /** Allow loopback, private, link-local and metadata addresses (local networks, tests). Default false. */
  allowPrivateSources?: boolean;
  /** Overall time for one http(s) source, redirects, connect, headers and body included. Default 5000. */
  timeoutMs?: number;
  /** Largest body accepted, in bytes. Default 256 KiB. */
  maxBytes?: number;
  /** Redirects followed per source. Default 3. */
  maxRedirects?: number;
  /** DNS resolution, injectable for tests. Default: `node:dns/promises` lookup with `all: true`. */
  lookup?: (hostname: string) => Promise<ResolvedAddress[]>;
  /** Where skipped sources are reported. Default `console`. */
  logger?: { warn(message: string): void };
  /** Sources tried per query by `resolveSources`, the rest ignored. Default 5. */
  maxSources?: number;
  /** One deadline over all the sources of a query (`resolveSources`), in ms. Default 8000. */
  deadlineMs?: number;
  /** Aborts the fetch (as a timeout). */
  signal?: AbortSignal;
  /** Headers sent besides `accept` and `accept-encoding: identity` (e.g. `a2a-version` when reading an A2A card). */
  headers?: Record<string, string>;
};

/** The defaults of {@link SourceOptions} for one source. */
export const SOURCE_DEFAULTS = { timeoutMs: 5000, maxBytes: 256 * 1024, maxRedirects: 3 } as const;

/**
 * Fetches one http(s) source with all guards; throws AgoraError('SOURCE_FAILED', reason) on any failure.
 * @example const bytes = await fetchSource('https://agent.example/protocols/2814712b…', { timeoutMs: 2000 });
 */
export async function fetchSource(url: string, options: SourceOptions = {}): Promise<Buffer> {
  const failure = (reason: string, hop = url, cause?: unknown) =>
    new AgoraError(
      'SOURCE_FAILED',
      `Cannot fetch ${describeSource(url)}: ${reason}${hop === url ? '' : ` (at ${describeSource(hop)})`}`,
      { cause },
    );
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw failure('not a valid URL');
  }
  const client = new HttpClient({
    guard: {
      allowPrivateAddresses: options.allowPrivateSources ?? false,
      lookup: options.lookup,
      setting: 'allowPrivateSources',
    },
    timeoutMs: options.timeoutMs ?? SOURCE_DEFAULTS.timeoutMs,
    maxReplyBytes: options.maxBytes ?? SOURCE_DEFAULTS.maxBytes,
    maxRedirects: options.maxRedirects ?? SOURCE_DEFAULTS.maxRedirects,
    describe: (reason, at) => failure(reason, at.hop === at.url ? url : at.hop).message,
  });
  try {
    const reply = await client.request('GET', parsed.href, {
      signal: options.signal,
      headers: { accept: 'text/plain, text/markdown;q=0.9, */*;q=0.1', ...options.headers },
    });
    if (reply.status < 200 || reply.status > 299)
      throw failure(`HTTP ${reply.status}`, reply.url === parsed.href ? url : reply.url);
    return reply.bytes;
  } catch (error) {
    // The caller's deadline (all the sources of a query) ended this source.
    if (options.signal?.aborted) throw failure("the deadline for this query's sources passed");
    if (isAgoraError(error) && error.code !== 'SOURCE_FAILED')
      throw new AgoraError('SOURCE_FAILED', error.message, { cause: error });
    throw error;
  }
}

/** A source as it may appear in a log line: no credentials, no control characters, data URIs cut short. */
export function describeSource(source: string): string {
  let text = source;
  if (/^https?:/i.test(source)) {
    try {
      const url = new URL(source);
      url.username = '';
      url.password = '';
      text = url.href;
    } catch {
      // Not a URL: shown as given, sanitized below.
    }
  }
  // eslint-disable-next-line no-control-regex
  text = text.replace(/[\u0000-\u001f\u007f]/g, '?');
  const limit = /^data:/i.test(text) ? 100 : 200;
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}
