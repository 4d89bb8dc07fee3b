import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, isIPv4, isIPv6, type LookupFunction } from 'node:net';
import { AgoraError, describeError } from '../errors.js';
import { hashText, normalizeHash, parseDocument, type ProtocolDocument } from './document.js';

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
};

type ResolvedAddress = { address: string; family: 4 | 6 };

type Settings = {
  allowPrivateSources: boolean;
  timeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
  lookup: (hostname: string) => Promise<ResolvedAddress[]>;
};

const DEFAULT_TIMEOUT_MS = 5000;
const DEFAULT_MAX_BYTES = 256 * 1024;
const DEFAULT_MAX_REDIRECTS = 3;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
// RFC 2397: an omitted media type means text/plain.
const TEXT_MEDIA_TYPES = new Set(['', 'text/plain', 'text/markdown']);

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
  };
}

/**
 * Tries sources in order; returns the first document whose exact bytes hash to `expectedHash` (hex, already normalized).
 * @example const document = await resolveSources(hash, request.protocolSources ?? [], { logger });
 */
export async function resolveSources(
  expectedHash: string,
  sources: readonly string[],
  options: SourceOptions = {},
): Promise<ProtocolDocument | undefined> {
  const logger = options.logger ?? console;
  // Callers normally pass hex already; normalizing again costs nothing and makes a base64 hash work too.
  const wanted = normalizeHash(expectedHash);
  if (wanted === undefined) {
    logger.warn(`Protocol sources ignored: ${describeSource(expectedHash)} is not a protocol hash`);
    return undefined;
  }
  for (const rawSource of sources) {
    const source = rawSource.trim();
    const name = describeSource(source);
    const bytes = await readSource(source, name, options, logger);
    if (bytes === undefined) continue;
    const hash = hashText(bytes);
    if (hash !== wanted) {
      logger.warn(`Protocol source skipped: ${name} hashes to ${hash}, not ${wanted}`);
      continue;
    }
    try {
      return parseDocument(bytes, name);
    } catch (error) {
      // Every other source with this hash holds these same bytes, so it would fail the same way: stop here.
      logger.warn(`Protocol source skipped: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    }
  }
  return undefined;
}

async function readSource(
  source: string,
  name: string,
  options: SourceOptions,
  logger: { warn(message: string): void },
): Promise<Buffer | undefined> {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(source)?.[1]?.toLowerCase();
  if (scheme === 'data') {
    const bytes = decodeDataUri(source);
    if (bytes === undefined) logger.warn(`Protocol source skipped: ${name} is not a text/plain or text/markdown data: URI`);
    return bytes;
  }
  if (scheme === 'http' || scheme === 'https') {
    try {
      return await fetchSource(source, options);
    } catch (error) {
      logger.warn(`Protocol source skipped: ${error instanceof AgoraError ? error.message : describeError(error)}`);
      return undefined;
    }
  }
  // `file:`, `ftp:` and the like would let a peer read the receiver's own disk or network.
  logger.warn(`Protocol source skipped: ${name} has an unsupported scheme (expected http, https or data)`);
  return undefined;
}

/**
 * Decodes a `data:` URI (both forms of spec §3); undefined for other media types / malformed. Returns raw bytes (Buffer).
 * @example decodeDataUri('data:text/plain;charset=utf-8,1%2B1') // Buffer of "1+1"
 */
export function decodeDataUri(uri: string): Buffer | undefined {
  if (!/^data:/i.test(uri)) return undefined;
  const comma = uri.indexOf(',');
  if (comma < 0) return undefined;
  const [mediaType = '', ...parameters] = uri
    .slice('data:'.length, comma)
    .split(';')
    .map((part) => part.trim().toLowerCase());
  if (!TEXT_MEDIA_TYPES.has(mediaType)) return undefined;
  // A raw `#` is kept as data, not cut as a fragment: Markdown headings sent unencoded must still hash right.
  const data = percentDecode(uri.slice(comma + 1));
  if (data === undefined) return undefined;
  return parameters.at(-1) === 'base64' ? decodeBase64(data) : data;
}

function hexDigit(byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x41 + 10;
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x61 + 10;
  return -1;
}

// Byte-level percent-decoding: `%C3%A9` becomes two bytes rather than two Latin-1 characters, `+` stays `+`
// (this is not form encoding), and raw non-ASCII text is taken as its UTF-8 bytes.
function percentDecode(text: string): Buffer | undefined {
  const input = Buffer.from(text, 'utf8');
  const output = Buffer.alloc(input.length);
  let length = 0;
  for (let index = 0; index < input.length; index += 1) {
    const byte = input[index] ?? 0;
    if (byte !== 0x25) {
      output[length++] = byte;
      continue;
    }
    const high = hexDigit(input[index + 1] ?? -1);
    const low = hexDigit(input[index + 2] ?? -1);
    if (high < 0 || low < 0) return undefined;
    output[length++] = high * 16 + low;
    index += 2;
  }
  return output.subarray(0, length);
}

// Buffer's own base64 decoder skips junk silently; a malformed source must be refused instead.
function decodeBase64(data: Buffer): Buffer | undefined {
  const text = data.toString('latin1').replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(text) || text.length % 4 === 1) return undefined;
  return Buffer.from(text, 'base64');
}

/**
 * Encodes a document text as a `data:text/plain;charset=utf-8,<percent-encoded>` URI the way Python's urllib.parse.quote does (safe chars: letters, digits, `_.-~/`).
 * @example encodeDataUri('hello world/+') // 'data:text/plain;charset=utf-8,hello%20world/%2B'
 */
export function encodeDataUri(text: string): string {
  const parts: string[] = [];
  for (const byte of Buffer.from(text, 'utf8')) {
    const safe =
      (byte >= 0x30 && byte <= 0x39) ||
      (byte >= 0x41 && byte <= 0x5a) ||
      (byte >= 0x61 && byte <= 0x7a) ||
      byte === 0x5f || // _
      byte === 0x2e || // .
      byte === 0x2d || // -
      byte === 0x7e || // ~
      byte === 0x2f; // /
    parts.push(safe ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`);
  }
  return `data:text/plain;charset=utf-8,${parts.join('')}`;
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
      if (signal.aborted) throw fail(`timed out after ${settings.timeoutMs} ms`);
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
      throw fail(`${subject} is a loopback, private, link-local, reserved or metadata address (allowPrivateSources is off)`);
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

function formatSize(bytes: number): string {
  return bytes % 1024 === 0 ? `${bytes / 1024} KiB` : `${bytes} bytes`;
}

function download(url: URL, target: ResolvedAddress, settings: Settings, signal: AbortSignal, fail: Fail): Promise<Outcome> {
  return new Promise<Outcome>((resolve, reject) => {
    if (signal.aborted) {
      reject(fail(`timed out after ${settings.timeoutMs} ms`));
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
    const onAbort = (): void => finish({ error: fail(`timed out after ${settings.timeoutMs} ms`) });
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
        headers: { accept: 'text/plain, text/markdown;q=0.9, */*;q=0.1', 'accept-encoding': 'identity' },
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

function stripBrackets(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

// A source as it may appear in a log line: no credentials, no control characters, data URIs cut short.
function describeSource(source: string): string {
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

const FORBIDDEN_IPV4: readonly (readonly [string, number])[] = [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT (Alibaba Cloud's metadata 100.100.100.200 lives here)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata 169.254.169.254
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments (Oracle Cloud's metadata 192.0.0.192)
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast, deprecated
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
];

// Public-looking addresses that only answer from inside a cloud: Azure's wire server.
const METADATA_IPV4 = new Set(['168.63.129.16']);

function ipv4Number(address: string): number | undefined {
  if (!isIPv4(address)) return undefined;
  return address.split('.').reduce((value, part) => value * 256 + Number(part), 0);
}

const FORBIDDEN_IPV4_RANGES = FORBIDDEN_IPV4.map(([base, length]) => {
  const size = 2 ** (32 - length);
  const start = ipv4Number(base) ?? 0;
  return { start, end: start + size - 1 };
});

function isForbiddenIPv4(value: number): boolean {
  const dotted = [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
  if (METADATA_IPV4.has(dotted)) return true;
  return FORBIDDEN_IPV4_RANGES.some(({ start, end }) => value >= start && value <= end);
}

// The 16 bytes of an IPv6 address, dotted IPv4 tail (`::ffff:1.2.3.4`) included.
function ipv6Bytes(address: string): number[] | undefined {
  if (!isIPv6(address)) return undefined;
  let text = address;
  const lastColon = text.lastIndexOf(':');
  const tail = ipv4Number(text.slice(lastColon + 1));
  if (tail !== undefined) {
    text = `${text.slice(0, lastColon + 1)}${(tail >>> 16).toString(16)}:${(tail & 0xffff).toString(16)}`;
  }
  const [head = '', rest] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const restGroups = rest === undefined || rest === '' ? [] : rest.split(':');
  const missing = 8 - headGroups.length - restGroups.length;
  if (missing < 0 || (rest === undefined && missing !== 0)) return undefined;
  const groups = [...headGroups, ...Array<string>(missing).fill('0'), ...restGroups];
  return groups.flatMap((group) => {
    const value = Number.parseInt(group, 16);
    return [value >>> 8, value & 255];
  });
}

function hasPrefix(bytes: readonly number[], prefix: readonly number[], bits: number): boolean {
  for (let bit = 0; bit < bits; bit += 8) {
    const remaining = Math.min(8, bits - bit);
    const mask = (0xff << (8 - remaining)) & 0xff;
    if (((bytes[bit / 8] ?? 0) & mask) !== ((prefix[bit / 8] ?? 0) & mask)) return false;
  }
  return true;
}

function embeddedIPv4(bytes: readonly number[], offset: number): number {
  return (bytes[offset] ?? 0) * 2 ** 24 + (bytes[offset + 1] ?? 0) * 2 ** 16 + (bytes[offset + 2] ?? 0) * 2 ** 8 + (bytes[offset + 3] ?? 0);
}

const IPV4_MAPPED = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];
const NAT64 = [0x00, 0x64, 0xff, 0x9b];
const SIX_TO_FOUR = [0x20, 0x02];
const GLOBAL_UNICAST = [0x20];
// Inside 2000::/3, still not a web server on the internet.
const FORBIDDEN_GLOBAL_IPV6: readonly (readonly [readonly number[], number])[] = [
  [[0x20, 0x01, 0x00, 0x00], 23], // IETF protocol assignments, Teredo tunnels included
  [[0x20, 0x01, 0x0d, 0xb8], 32], // documentation
  [[0x3f, 0xff], 20], // documentation (RFC 9637)
];

function isForbiddenIPv6(bytes: readonly number[]): boolean {
  // Addresses that carry an IPv4 address are judged by it: ::ffff:127.0.0.1 is loopback in disguise.
  if (hasPrefix(bytes, IPV4_MAPPED, 96)) return isForbiddenIPv4(embeddedIPv4(bytes, 12));
  if (hasPrefix(bytes, NAT64, 96)) return isForbiddenIPv4(embeddedIPv4(bytes, 12));
  if (hasPrefix(bytes, SIX_TO_FOUR, 16)) return isForbiddenIPv4(embeddedIPv4(bytes, 2));
  // Only global unicast reaches the internet; outside it lie ::, ::1, fc00::/7 (fd00:ec2::254, AWS metadata),
  // fe80::/10, fec0::/10, ff00::/8, 100::/64 and the other reserved blocks.
  if (!hasPrefix(bytes, GLOBAL_UNICAST, 3)) return true;
  return FORBIDDEN_GLOBAL_IPV6.some(([prefix, bits]) => hasPrefix(bytes, prefix, bits));
}

/**
 * Whether an IP address (v4 or v6, including IPv4-mapped IPv6 like ::ffff:127.0.0.1 and ::ffff:7f00:1) is loopback, private (10/8, 172.16/12, 192.168/16, 100.64/10 CGNAT, fc00::/7), link-local (169.254/16, fe80::/10), unspecified (0.0.0.0/8, ::), multicast/reserved, or a metadata address (169.254.169.254, fd00:ec2::254).
 * Anything that is not an IP address counts as forbidden, so a caller's mistake fails closed.
 * @example isForbiddenAddress('::ffff:7f00:1') // true
 */
export function isForbiddenAddress(address: string): boolean {
  const text = stripBrackets(address.trim());
  const ipv4 = ipv4Number(text);
  if (ipv4 !== undefined) return isForbiddenIPv4(ipv4);
  // A zone (`fe80::1%eth0`) only ever qualifies a link-local address; the address itself decides.
  const bytes = ipv6Bytes(text.split('%')[0] ?? '');
  return bytes === undefined ? true : isForbiddenIPv6(bytes);
}
