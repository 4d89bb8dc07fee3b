// A fetch for URLs strangers give: every connection goes to an address vetted by the SSRF rule of protocol
// sources, and that very address is the one connected to (no second DNS answer in between). The hub's rooms
// post their turns through it, so a participant URL reaches only what registration would have accepted.
import { lookup as dnsLookup } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import { isForbiddenAddress, stripBrackets } from './address.js';

/** Options of {@link guardedFetch}. */
export type GuardedFetchOptions = {
  /** Allow loopback, private, link-local and metadata addresses (the hub's `--allow-private-agents`). Default false. */
  allowPrivateAddresses?: boolean;
};

/** Why a guarded fetch refused an address: it never connects there. */
export class ForbiddenAddressError extends Error {
  readonly code = 'EFORBIDDENADDRESS';
}

/** Resolves like the system, then refuses the whole name when any answer is forbidden (a rebinding attempt). */
function vettingLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(stripBrackets(hostname), { all: true, verbatim: true }, (error, addresses) => {
      if (error) return callback(error, '', 4);
      const forbidden = allowPrivate ? undefined : addresses.find(({ address }) => isForbiddenAddress(address));
      if (forbidden !== undefined)
        return callback(new ForbiddenAddressError(`${hostname} resolves to a forbidden address`), '', 4);
      const first = addresses[0];
      if (first === undefined) return callback(new Error(`${hostname} resolves to no address`), '', 4);
      if (options.all) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  };
}

/**
 * A `fetch` whose connections reach only vetted addresses; no redirects are followed and no compression is asked
 * for (a reply is read as sent, so a size cap on it is a cap on what is held).
 * @example const sender = new Sender({ llm: null, fetch: guardedFetch({ allowPrivateAddresses: false }) });
 */
export function guardedFetch(options: GuardedFetchOptions = {}): typeof fetch {
  const allowPrivate = options.allowPrivateAddresses === true;
  const lookup = vettingLookup(allowPrivate);
  return (async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new TypeError(`unsupported scheme ${url.protocol}`);
    const host = stripBrackets(url.hostname);
    // A literal address never goes through the lookup: it is vetted here.
    if (isIP(host) !== 0 && !allowPrivate && isForbiddenAddress(host))
      throw new TypeError('fetch failed', { cause: new ForbiddenAddressError(`${host} is a forbidden address`) });
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, key) => (headers[key] = value));
    headers['accept-encoding'] = 'identity';
    const body = typeof init.body === 'string' ? init.body : undefined;
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const signal = init.signal ?? undefined;
    return new Promise<Response>((resolve, reject) => {
      const request = send(
        url,
        { method: init.method ?? 'GET', headers, lookup, ...(signal ? { signal } : {}) },
        (incoming: IncomingMessage) => {
          const responseHeaders = new Headers();
          for (const [key, value] of Object.entries(incoming.headers))
            if (typeof value === 'string') responseHeaders.set(key, value);
          const status = incoming.statusCode ?? 502;
          const nullBody = status === 204 || status === 304 || init.method === 'HEAD';
          if (nullBody) incoming.resume();
          resolve(
            new Response(nullBody ? null : (Readable.toWeb(incoming) as ReadableStream<Uint8Array>), {
              status: status < 200 || status > 599 ? 502 : status,
              headers: responseHeaders,
            }),
          );
        },
      );
      request.on('error', (error) => reject(new TypeError('fetch failed', { cause: error })));
      request.end(body);
    });
  }) as typeof fetch;
}
