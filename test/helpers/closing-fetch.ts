// A `fetch` that opens a new connection for every request (`agent: false`, `Connection: close`): behind `--workers`,
// the cluster's primary hands each new connection to the next worker, so a client's requests cross the workers.
import { request } from 'node:http';
import { Readable } from 'node:stream';

/** `fetch`'s shape over node:http, one connection per request; enough for the peers' SDK clients on loopback. */
export const closingFetch: typeof fetch = (input, init) =>
  new Promise<Response>((resolve, reject) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    headers.set('connection', 'close');
    const outgoing = request(
      url,
      {
        method: init?.method ?? 'GET',
        agent: false,
        headers: Object.fromEntries(headers),
        signal: init?.signal ?? undefined,
      },
      (response) => {
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(response.headers))
          if (value !== undefined) responseHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
        const empty = response.statusCode === 204 || response.statusCode === 304 || init?.method === 'HEAD';
        resolve(
          new Response(empty ? null : (Readable.toWeb(response) as ReadableStream<Uint8Array>), {
            status: response.statusCode ?? 0,
            headers: responseHeaders,
          }),
        );
      },
    );
    outgoing.on('error', reject);
    const body = init?.body;
    if (body === undefined || body === null) outgoing.end();
    else if (typeof body === 'string' || body instanceof Uint8Array) outgoing.end(body);
    else reject(new Error('closingFetch: only string and byte bodies'));
  });
