// The sender's side of a hub's protocol database: search it for a fitting document before negotiating, fetch a
// document by hash (verified here, never trusted), publish a negotiated one. It lives below `hub/` (the layers
// import one way); the one hub client (src/hub/client.ts, `HubClient`) extends it with the rest of the hub's API,
// so every exchange with a hub goes through one request here.
import { z } from 'zod';
import { AgoraError, isAgoraError, networkFailure } from '../errors.js';
import { hashText } from '../protocol/document.js';
import { readCapped } from './transport.js';

/** The default bound on each exchange with the hub in the sender's path: short, as negotiation is the fallback. */
export const DEFAULT_HUB_TIMEOUT_MS = 2_000;

// A PD larger than the receivers' source cap is no PD.
const MAX_DOCUMENT_BYTES = 256 * 1024;
// A search answer larger than this is not a hub's.
const MAX_LISTING_BYTES = 1024 * 1024;

/** A document the hub lists: its hex hash, name and description. */
export type HubListing = { hash: string; name: string; description: string };

/** What a sender needs of a hub: search, fetch by hash (verified), publish. {@link HubProtocols} speaks HTTP; the hub's `HubClient` fits too. */
export interface ProtocolHub {
  /** The hub's base URL, for logs. */
  readonly url: string;
  /** Documents whose names or descriptions match `query`, best first. */
  protocols(query: string, limit?: number): Promise<HubListing[]>;
  /** A document's exact text, its SHA1 checked; undefined when the hub lacks it. */
  protocolText(hash: string): Promise<string | undefined>;
  /** Publishes a document (the hub checks its hash). */
  publish(text: string): Promise<unknown>;
}

const listingSchema = z.object({
  protocols: z.array(z.object({ hash: z.string(), name: z.string(), description: z.string() }).loose()),
});

/** Options of {@link HubProtocols}. */
export type HubProtocolsOptions = {
  url: string;
  token?: string | undefined;
  fetch?: typeof fetch;
  /** Bound on each exchange, ms (default 2 s). */
  timeoutMs?: number;
  /** Largest reply read, in bytes (default 1 MiB). */
  maxReplyBytes?: number;
};

const failureSchema = z.object({ error: z.string() }).loose();

/**
 * Downloads `<hub>/protocols/<hash>` and checks its SHA1: a hub serving another text under a hash is refused.
 * Undefined when the hub answers 404.
 */
export async function downloadVerified(
  fetcher: typeof fetch,
  hubUrl: string,
  hash: string,
  timeoutMs: number,
): Promise<string | undefined> {
  const url = `${hubUrl}/protocols/${encodeURIComponent(hash)}`;
  let response: Response;
  try {
    response = await fetcher(url, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    throw new AgoraError(
      'PEER_FAILURE',
      `GET ${url}: ${error instanceof Error && error.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : networkFailure(error)}`,
      { cause: error },
    );
  }
  if (response.status === 404) return undefined;
  if (!response.ok)
    throw new AgoraError('PEER_FAILURE', `GET ${url}: HTTP ${response.status}`, { status: response.status });
  let bytes: Buffer;
  try {
    // Read as it comes and cut off past the cap: a lying hub's body is never buffered whole.
    bytes = await readCapped(response, MAX_DOCUMENT_BYTES, `GET ${url}`);
  } catch (error) {
    if (isAgoraError(error)) throw error;
    throw new AgoraError('PEER_FAILURE', `GET ${url}: ${networkFailure(error)}`, { cause: error });
  }
  const actual = hashText(bytes);
  if (actual !== hash.toLowerCase())
    throw new AgoraError('PEER_FAILURE', `The hub served a document under ${hash} that hashes to ${actual}: refused`);
  return bytes.toString('utf8');
}

/**
 * A hub's protocol database over HTTP, each exchange bounded (default 2 s): what `new Sender({ hub })` uses.
 * @example const hub = new HubProtocols({ url: 'http://127.0.0.1:4000' }); const found = await hub.protocols('weather forecast');
 */
export class HubProtocols implements ProtocolHub {
  readonly url: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;
  readonly #maxReplyBytes: number;

  constructor(options: HubProtocolsOptions) {
    let parsed: URL;
    try {
      parsed = new URL(options.url);
    } catch {
      throw new AgoraError('BAD_REQUEST', `hub: not a URL: ${JSON.stringify(options.url)}`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
      throw new AgoraError('BAD_REQUEST', `hub: not an http(s) URL: ${options.url}`);
    this.url = options.url.replace(/\/+$/, '');
    this.#token = options.token;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_HUB_TIMEOUT_MS;
    this.#maxReplyBytes = options.maxReplyBytes ?? MAX_LISTING_BYTES;
  }

  async protocols(query: string, limit = 5): Promise<HubListing[]> {
    const { protocols } = await this.request(
      'GET',
      `/protocols?${new URLSearchParams({ q: query, limit: String(limit) })}`,
      listingSchema,
    );
    return protocols.map(({ hash, name, description }) => ({ hash, name, description }));
  }

  protocolText(hash: string): Promise<string | undefined> {
    return downloadVerified(this.#fetch, this.url, hash, this.#timeoutMs);
  }

  async publish(text: string): Promise<unknown> {
    return this.request('POST', '/protocols', z.unknown(), { hash: hashText(text), text });
  }

  /**
   * One exchange with the hub, bounded in time and size: its JSON reply read through `schema`. A refusal keeps the
   * hub's text and its status (`NOT_FOUND`, `UNAUTHORIZED`, `BAD_REQUEST`); anything else is a `PEER_FAILURE`.
   */
  protected async request<T>(method: string, path: string, schema: z.ZodType<T>, body?: unknown): Promise<T> {
    const target = `${method} ${this.url}${path}`;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    const timedOut = (error: unknown) => error instanceof Error && error.name === 'TimeoutError';
    let response: Response;
    try {
      response = await this.#fetch(`${this.url}${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (error) {
      throw new AgoraError(
        'PEER_FAILURE',
        `${target}: ${timedOut(error) ? `no answer within ${this.#timeoutMs} ms` : networkFailure(error)}`,
        { cause: error },
      );
    }
    let text: string;
    try {
      text = (await readCapped(response, this.#maxReplyBytes, target)).toString('utf8');
    } catch (error) {
      if (isAgoraError(error)) throw error;
      throw new AgoraError(
        'PEER_FAILURE',
        `${target}: ${timedOut(error) ? `no whole answer within ${this.#timeoutMs} ms` : networkFailure(error)}`,
        { cause: error },
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new AgoraError('PEER_FAILURE', `${target}: HTTP ${response.status}, not JSON`, { status: response.status });
    }
    if (!response.ok) {
      const message = failureSchema.safeParse(json).data?.error ?? `HTTP ${response.status}`;
      const code =
        response.status === 404
          ? 'NOT_FOUND'
          : response.status === 401
            ? 'UNAUTHORIZED'
            : response.status < 500
              ? 'BAD_REQUEST'
              : 'PEER_FAILURE';
      throw new AgoraError(code, `${message} (${target}: HTTP ${response.status})`, { status: response.status });
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success)
      throw new AgoraError(
        'PEER_FAILURE',
        `${target}: unexpected reply: ${z.prettifyError(parsed.error).split('\n')[0]}`,
      );
    return parsed.data;
  }
}
