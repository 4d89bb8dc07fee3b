// The sender's side of a hub's protocol database: search it for a fitting document before negotiating, fetch a
// document by hash (verified here, never trusted), publish a negotiated one. It lives below `hub/` (the layers
// import one way); the one hub client (src/hub/client.ts, `HubClient`) extends it with the rest of the hub's API,
// so every exchange with a hub goes through one request here.
import { z } from 'zod';
import { AgoraError } from '../errors.js';
import { HttpClient } from '../net/client.js';
import type { TokenSource } from '../net/token-source.js';
import { hashText } from '../protocol/document.js';
import { SENDER_DEFAULTS } from './config.js';

// A PD larger than the receivers' source cap is no PD.
const MAX_DOCUMENT_BYTES = 256 * 1024;

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
  /** Where a renewed token comes from (client credentials), sent to the hub's origin only; wins over `token`. */
  tokenSource?: TokenSource | undefined;
  fetch?: typeof fetch | undefined;
  /** Bound on each exchange, ms (default 2 s). */
  timeoutMs?: number;
  /** Largest reply read, in bytes (default 1 MiB). */
  maxReplyBytes?: number;
};

const failureSchema = z.object({ error: z.string() }).loose();

/**
 * A hub's protocol database over HTTP, each exchange bounded (default 2 s): what `new Sender({ hub })` uses.
 * @example const hub = new HubProtocols({ url: 'http://127.0.0.1:4000' }); const found = await hub.protocols('weather forecast');
 */
export class HubProtocols implements ProtocolHub {
  readonly url: string;
  /** The one client, its token kept to the hub's origin. */
  protected readonly client: HttpClient;

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
    this.client = new HttpClient({
      fetch: options.fetch,
      token: options.token,
      tokenSource: options.tokenSource,
      tokenOrigin: parsed.origin,
      timeoutMs: options.timeoutMs ?? SENDER_DEFAULTS.hubTimeoutMs,
      maxReplyBytes: options.maxReplyBytes ?? SENDER_DEFAULTS.hubMaxReplyBytes,
    });
  }

  async protocols(query: string, limit = 5): Promise<HubListing[]> {
    const { protocols } = await this.request(
      'GET',
      `/protocols?${new URLSearchParams({ q: query, limit: String(limit) })}`,
      listingSchema,
    );
    return protocols.map(({ hash, name, description }) => ({ hash, name, description }));
  }

  /** Downloads `<hub>/protocols/<hash>` and checks its SHA1: a hub serving another text under a hash is refused. */
  async protocolText(hash: string): Promise<string | undefined> {
    const url = `${this.url}/protocols/${encodeURIComponent(hash)}`;
    // Read as it comes and cut off past the cap: a lying hub's body is never buffered whole.
    const reply = await this.client.request('GET', url, { maxBytes: MAX_DOCUMENT_BYTES, headers: { accept: '*/*' } });
    if (reply.status === 404) return undefined;
    if (reply.status < 200 || reply.status > 299)
      throw new AgoraError('PEER_FAILURE', this.client.wording('GET', url)(`HTTP ${reply.status}`), {
        status: reply.status,
      });
    const actual = hashText(reply.bytes);
    if (actual !== hash.toLowerCase())
      throw new AgoraError('PEER_FAILURE', `The hub served a document under ${hash} that hashes to ${actual}: refused`);
    return reply.bytes.toString('utf8');
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
    const reply = await this.client.request(method, `${this.url}${path}`, { json: body });
    let json: unknown;
    try {
      json = JSON.parse(reply.bytes.toString('utf8'));
    } catch {
      throw new AgoraError(
        'PEER_FAILURE',
        `${target}: ${reply.status >= 200 && reply.status <= 299 ? 'reply' : `HTTP ${reply.status},`} not JSON`,
        { status: reply.status },
      );
    }
    if (reply.status < 200 || reply.status > 299) {
      const message = failureSchema.safeParse(json).data?.error ?? `HTTP ${reply.status}`;
      const code =
        reply.status === 404
          ? 'NOT_FOUND'
          : reply.status === 401
            ? 'UNAUTHORIZED'
            : reply.status < 500
              ? 'BAD_REQUEST'
              : 'PEER_FAILURE';
      throw new AgoraError(code, `${message} (${target}: HTTP ${reply.status})`, { status: reply.status });
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
