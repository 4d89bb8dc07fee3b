// The one client as a `fetch`, for a peer's own SDK (a2a-js, MCP's): the SDK keeps its wire, the client keeps the
// bounds, the token and the wording.
import { AgoraError } from '../errors.js';
import { HttpClient, type HttpClientOptions } from './client.js';
import { networkError, noAnswerWithin, type Wording } from './failure.js';

/**
 * A `fetch` bounded as the one client's requests are: the caller's headers and token (kept to its origin), each wait
 * bounded by the timeout (for the reply, and between two pieces of an event stream), every body capped; a failure
 * is an AgoraError naming the method and URL.
 * @example const fetch = boundedFetch({ token, timeoutMs: 10_000 }); const client = new A2AClient(card, { fetch });
 */
export function boundedFetch(options: HttpClientOptions = {}): typeof fetch {
  const client = new HttpClient(options);
  return async (input, init = {}) => {
    const request = input instanceof Request ? input : undefined;
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const method = (init.method ?? request?.method ?? 'GET').toUpperCase();
    const headers: Record<string, string> = {};
    new Headers(init.headers ?? request?.headers).forEach((value, name) => (headers[name] = value));
    const raw = init.body ?? (request?.body ? await request.text() : undefined);
    const body = raw === undefined || raw === null || typeof raw === 'string' ? raw : await new Response(raw).text();
    const signal = init.signal ?? request?.signal ?? undefined;
    const reply = await client.request(method, url, { headers, signal, streams: true, ...(body ? { body } : {}) });
    const kept = new Headers(reply.headers);
    kept.delete('content-length');
    kept.delete('content-encoding');
    const shape = { status: reply.status, headers: kept };
    if (reply.body) return new Response(boundedStream(reply.body, client, client.wording(method, url)), shape);
    return new Response(reply.status === 204 || reply.status === 304 ? null : reply.bytes, shape);
  };
}

/** An event stream's body, each piece awaited within the client's timeout, the whole capped at its reply cap. */
function boundedStream(
  body: ReadableStream<Uint8Array>,
  client: HttpClient,
  words: Wording,
): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let size = 0;
  return new ReadableStream<Uint8Array>({
    async pull(stream) {
      let clock: NodeJS.Timeout | undefined;
      const idle = new Promise<never>((_, reject) => {
        clock = setTimeout(
          () => reject(new AgoraError('TIMEOUT', words(noAnswerWithin(client.timeoutMs)))),
          client.timeoutMs,
        );
      });
      try {
        const { done, value } = await Promise.race([reader.read(), idle]);
        if (done) return stream.close();
        size += value.byteLength;
        if (size > client.maxReplyBytes)
          throw new AgoraError('PEER_FAILURE', words(`stream larger than ${client.maxReplyBytes} bytes`));
        stream.enqueue(value);
      } catch (error) {
        await reader.cancel().catch(() => undefined);
        stream.error(networkError(words, error));
      } finally {
        clearTimeout(clock);
      }
    },
    cancel: async () => void (await reader.cancel().catch(() => undefined)),
  });
}
