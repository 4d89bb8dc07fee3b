// Fetching one http(s) protocol source behind the SSRF guard: vetted addresses, a pinned connection, bounds.
import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { AgoraError, describeError } from '../errors.js';
import { isForbiddenAddress, stripBrackets } from './address.js';

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
  lookup?: (hostname: string) => Promise<{ address: string; family: 4 | 6 }[]>;
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

type ResolvedAddress = { address: string; family: 4 | 6 };

type Settings = {
  allowPrivateSources: boolean;
  timeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
  lookup: (hostname: string) => Promise<ResolvedAddress[]>;
  outer: AbortSignal | undefined;
  headers: Record<string, string>;
};

const DEFAULT_TIMEOUT_MS = 5000;
const DEFAULT_MAX_BYTES = 256 * 1024;
const DEFAULT_MAX_REDIRECTS = 3;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
async function systemLookup(hostname: string): Promise<ResolvedAddress[]> {
  const addresses = await dnsLookup(hostname, { all: true, verbatim: true });
  return addresses.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
}

function withDefaults(options: SourceOptions): Settings {
  return {
    allowPrivateSources: options.allowPrivateSources ?? false,
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES,
    maxRedirects: options.maxRedirects ?? DEFAULT_MAX_REDIRECTS,
    lookup: options.lookup ?? systemLookup,
    outer: options.signal,
    headers: {
      accept: 'text/plain, text/markdown;q=0.9, */*;q=0.1',
      ...options.headers,
      'accept-encoding': 'identity',
    },
  };
}

/**
 * Fetches one http(s) source with all guards; throws AgoraError('SOURCE_FAILED', reason) on any failure.
 * @example const bytes = await fetchSource('https://agent.example/protocols/2814712b…', { timeoutMs: 2000 });
 */
export async function fetchSource(url: string, options: SourceOptions = {}): Promise<Buffer> {
  const settings = withDefaults(options);
  let current: URL;
  try {
    current = new URL(url);
  } catch {
    throw new AgoraError('SOURCE_FAILED', `Cannot fetch ${describeSource(url)}: not a valid URL`);
  }
  // One clock for the whole chain, so a slow redirect ladder cannot stretch the budget.
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), settings.timeoutMs);
  // The caller's deadline (all the sources of a query) ends this source too.
  const outer = options.signal;
  const onOuter = () => controller.abort();
  if (outer?.aborted) controller.abort();
  else outer?.addEventListener('abort', onOuter, { once: true });
  try {
    for (let redirects = 0; ; redirects += 1) {
      const hop = current;
      const fail = (reason: string, cause?: unknown): AgoraError => {
        const where = hop.href === url ? '' : ` (at ${describeSource(hop.href)})`;
        return new AgoraError('SOURCE_FAILED', `Cannot fetch ${describeSource(url)}: ${reason}${where}`, { cause });
      };
      const outcome = await fetchOnce(hop, settings, controller.signal, fail);
      if (outcome.kind === 'body') return outcome.body;
      if (redirects >= settings.maxRedirects) throw fail(`more than ${settings.maxRedirects} redirects`);
      current = outcome.location;
    }
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', onOuter);
  }
}

type Outcome = { kind: 'body'; body: Buffer } | { kind: 'redirect'; location: URL };
type Fail = (reason: string, cause?: unknown) => AgoraError;

// Every hop, the first included, is checked afresh: a redirect may change scheme, host and address.
async function fetchOnce(url: URL, settings: Settings, signal: AbortSignal, fail: Fail): Promise<Outcome> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw fail(`unsupported scheme ${url.protocol}`);
  const target = await vetHost(url, settings, signal, fail);
  return download(url, target, settings, signal, fail);
}

async function vetHost(url: URL, settings: Settings, signal: AbortSignal, fail: Fail): Promise<ResolvedAddress> {
  const host = stripBrackets(url.hostname);
  let addresses: ResolvedAddress[];
  const literalFamily = isIP(host);
  if (literalFamily !== 0) {
    addresses = [{ address: host, family: literalFamily === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await untilAborted(settings.lookup(host), signal);
    } catch (error) {
      if (signal.aborted) throw fail(timedOut(settings));
      throw fail(`cannot resolve ${host}: ${describeError(error)}`, error);
    }
  }
  const first = addresses[0];
  if (first === undefined) throw fail(`${host} resolves to no address`);
  const invalid = addresses.find(({ address }) => isIP(address) === 0);
  if (invalid !== undefined) throw fail(`${host} resolves to ${describeSource(invalid.address)}, not an IP address`);
  if (!settings.allowPrivateSources) {
    // Any forbidden address refuses the host: a name mixing public and private answers is a rebinding attempt.
    const forbidden = addresses.find(({ address }) => isForbiddenAddress(address));
    if (forbidden !== undefined) {
      const subject = forbidden.address === host ? host : `${host} resolves to ${forbidden.address}, which`;
      throw fail(
        `${subject} is a loopback, private, link-local, reserved or metadata address (allowPrivateSources is off)`,
      );
    }
  }
  return { address: first.address, family: isIP(first.address) === 6 ? 6 : 4 };
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

// Hands the socket the address we vetted, so a second DNS answer (rebinding) never reaches the connection.
function pinnedLookup(target: ResolvedAddress): LookupFunction {
  return (_hostname, lookupOptions, callback) => {
    // Node 20 asks for `all` when autoSelectFamily (happy eyeballs) is on, and for one address otherwise.
    if (lookupOptions.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
}

function timedOut(settings: Settings): string {
  return settings.outer?.aborted
    ? "the deadline for this query's sources passed"
    : `timed out after ${settings.timeoutMs} ms`;
}

function formatSize(bytes: number): string {
  return bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`;
}

function download(
  url: URL,
  target: ResolvedAddress,
  settings: Settings,
  signal: AbortSignal,
  fail: Fail,
): Promise<Outcome> {
  return new Promise<Outcome>((resolve, reject) => {
    if (signal.aborted) {
      reject(fail(timedOut(settings)));
      return;
    }
    const tooLarge = `larger than ${formatSize(settings.maxBytes)}`;
    let settled = false;
    let request: ClientRequest | undefined;
    const finish = (result: { error: AgoraError } | { outcome: Outcome }): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      // Destroyed on every path, success included: nothing else is left to read, and no socket outlives its use.
      request?.destroy();
      if ('error' in result) reject(result.error);
      else resolve(result.outcome);
    };
    const onAbort = (): void => finish({ error: fail(timedOut(settings)) });
    signal.addEventListener('abort', onAbort, { once: true });

    const onResponse = (response: IncomingMessage): void => {
      const status = response.statusCode ?? 0;
      if (REDIRECT_STATUSES.has(status)) {
        const location = response.headers.location;
        if (!location) return finish({ error: fail(`HTTP ${status} redirect without a Location header`) });
        let next: URL;
        try {
          next = new URL(location, url);
        } catch (error) {
          return finish({ error: fail(`HTTP ${status} redirect to an invalid URL`, error) });
        }
        return finish({ outcome: { kind: 'redirect', location: next } });
      }
      if (status < 200 || status > 299) return finish({ error: fail(`HTTP ${status}`) });
      const declared = Number(response.headers['content-length']);
      if (Number.isFinite(declared) && declared > settings.maxBytes) return finish({ error: fail(tooLarge) });

      // Content-Length may be absent or lie: count what actually arrives.
      const chunks: Buffer[] = [];
      let received = 0;
      response.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > settings.maxBytes) return finish({ error: fail(tooLarge) });
        chunks.push(chunk);
      });
      response.on('end', () => finish({ outcome: { kind: 'body', body: Buffer.concat(chunks, received) } }));
      response.on('error', (error) => finish({ error: fail(`connection failed: ${error.message}`, error) }));
      response.on('close', () => {
        if (!response.complete) finish({ error: fail('connection closed before the end of the body') });
      });
    };

    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    try {
      request = send({
        protocol: url.protocol,
        hostname: stripBrackets(url.hostname), // kept for the Host header and TLS server name
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        headers: settings.headers,
        agent: false, // a fresh socket per hop: no pooled connection to a host we have not vetted this time
        lookup: pinnedLookup(target),
      });
    } catch (error) {
      finish({ error: fail(describeError(error), error) });
      return;
    }
    request.on('response', onResponse);
    request.on('error', (error) => finish({ error: fail(error.message, error) }));
    request.end();
  });
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
