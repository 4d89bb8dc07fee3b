// The SSRF guard at every connection: a host is resolved, every answer vetted, and the socket handed that very
// address (no second DNS answer in between, so no rebinding). A `fetch` built on it follows no redirect: the one
// client follows them itself, so each hop is vetted afresh.
import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import { describeError } from '../errors.js';
import { isForbiddenAddress, stripBrackets } from './address.js';

/** One answer of a DNS lookup. */
export type ResolvedAddress = { address: string; family: 4 | 6 };

/** Options of the guard ({@link guardedFetch}, and the one client's `guard`). */
export type GuardOptions = {
  /** Allow loopback, private, link-local and metadata addresses (local networks, tests). Default false. */
  allowPrivateAddresses?: boolean;
  /** DNS resolution, injectable for tests. Default: `node:dns/promises` lookup with `all: true`. */
  lookup?: (hostname: string) => Promise<ResolvedAddress[]>;
  /** The setting a refusal names as off (`allowPrivateSources`, `--allow-private-agents`). */
  setting?: string;
};

/** Why the guard refused a host: it never connects there (a forbidden address, or no usable answer). */
export class ForbiddenAddressError extends Error {
  readonly code = 'EFORBIDDENADDRESS';
}

async function systemLookup(hostname: string): Promise<ResolvedAddress[]> {
  const addresses = await dnsLookup(hostname, { all: true, verbatim: true });
  return addresses.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
}

/**
 * The address to connect to for `hostname`: a literal is vetted as is, a name resolved and refused when any answer is
 * forbidden (a name mixing public and private answers is a rebinding attempt).
 */
export async function vetHost(hostname: string, options: GuardOptions = {}): Promise<ResolvedAddress> {
  const host = stripBrackets(hostname);
  const literal = isIP(host);
  let addresses: ResolvedAddress[];
  if (literal !== 0) addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
  else {
    try {
      addresses = await (options.lookup ?? systemLookup)(host);
    } catch (error) {
      throw new ForbiddenAddressError(`cannot resolve ${host}: ${describeError(error)}`, { cause: error });
    }
  }
  const first = addresses[0];
  if (first === undefined) throw new ForbiddenAddressError(`${host} resolves to no address`);
  const invalid = addresses.find(({ address }) => isIP(address) === 0);
  if (invalid !== undefined)
    throw new ForbiddenAddressError(`${host} resolves to ${JSON.stringify(invalid.address)}, not an IP address`);
  const forbidden = options.allowPrivateAddresses ? undefined : addresses.find((a) => isForbiddenAddress(a.address));
  if (forbidden !== undefined) {
    const subject = forbidden.address === host ? host : `${host} resolves to ${forbidden.address}, which`;
    const setting = options.setting ? ` (${options.setting} is off)` : '';
    throw new ForbiddenAddressError(
      `${subject} is a loopback, private, link-local, reserved or metadata address${setting}`,
    );
  }
  return { address: first.address, family: isIP(first.address) === 6 ? 6 : 4 };
}

// Hands the socket the address we vetted; Node 20 asks for `all` when autoSelectFamily (happy eyeballs) is on.
function pinnedLookup(target: ResolvedAddress): LookupFunction {
  return (_hostname, lookupOptions, callback) => {
    if (lookupOptions.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
}

// A lookup that never settles must still end with the caller's signal.
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => (signal.removeEventListener('abort', onAbort), resolve(value)),
      (error: unknown) => (signal.removeEventListener('abort', onAbort), reject(error)),
    );
  });
}

/**
 * A `fetch` whose connections reach only vetted addresses, one fresh socket each; no redirect is followed and no
 * compression asked for (a reply is read as sent, so a size cap on it is a cap on what is held). A refusal rejects
 * like a failed fetch, with a {@link ForbiddenAddressError} as its cause.
 * @example const sender = new Sender({ fetch: guardedFetch({ allowPrivateAddresses: false }) });
 */
export function guardedFetch(options: GuardOptions = {}): typeof fetch {
  return (async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const signal = init.signal ?? undefined;
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new TypeError('fetch failed', { cause: new ForbiddenAddressError(`unsupported scheme ${url.protocol}`) });
    let target: ResolvedAddress;
    try {
      target = await untilAborted(vetHost(url.hostname, options), signal);
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw new TypeError('fetch failed', { cause: error });
    }
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, key) => (headers[key] = value));
    headers['accept-encoding'] = 'identity';
    const body = typeof init.body === 'string' ? init.body : undefined;
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const method = init.method ?? 'GET';
    return new Promise<Response>((resolve, reject) => {
      const request = send(
        url,
        { method, headers, agent: false, lookup: pinnedLookup(target), ...(signal ? { signal } : {}) },
        (incoming: IncomingMessage) => {
          const responseHeaders = new Headers();
          for (const [key, value] of Object.entries(incoming.headers))
            if (typeof value === 'string') responseHeaders.set(key, value);
          const status = incoming.statusCode ?? 502;
          const nullBody = status === 204 || status === 304 || method === 'HEAD';
          if (nullBody) incoming.resume();
          resolve(
            new Response(nullBody ? null : (Readable.toWeb(incoming) as ReadableStream<Uint8Array>), {
              status: status < 200 || status > 599 ? 502 : status,
              headers: responseHeaders,
            }),
          );
        },
      );
      request.on('error', (error) =>
        reject(signal?.aborted ? signal.reason : new TypeError('fetch failed', { cause: error })),
      );
      request.end(body);
    });
  }) as typeof fetch;
}
