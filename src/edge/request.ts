// The one request type every mount reads, and the helpers that read a stranger's request target and headers safely.
import { randomBytes } from 'node:crypto';

/**
 * A request as a mount sees it: method, path relative to the mount point (still percent-encoded, with its query),
 * lower-case headers, and the body: given, or read on demand by `loadBody` (after routing and the guard, so refused
 * bodies are never read; the edge's size cap holds either way).
 */
export type EdgeRequest = {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The raw body, `undefined` when none (or when `loadBody` reads it). */
  body: Buffer | undefined;
  /** Reads the body on demand, capped: past the cap, `AgoraError('REQUEST_TOO_LARGE')`. */
  loadBody?: () => Promise<Buffer>;
  remoteAddress?: string | undefined;
  /**
   * The address the server that took the request listens on (`0.0.0.0`, `::`, `127.0.0.1`; a Unix socket's path),
   * when the adapter knows it: a dashboard answers without a token only on a server reachable from this machine alone.
   */
  readonly boundAddress?: string | undefined;
  /** Base URL of the mount point, e.g. `https://example.com/agora` (set by adapters that know it). */
  baseUrl?: string;
  /** Aborted when the client goes away. */
  signal?: AbortSignal | undefined;
  /** This request's id in the logs (set when requests are logged); one is made for an internal error otherwise. */
  id?: string | undefined;
  /**
   * What the mount that answers adds to the request's log record (set when requests are logged): the Agora mount
   * puts the protocol hash and the path taken (`taken`: `routine`, `llm`, `failure`) here.
   */
  log?: RequestLogFields | undefined;
  /**
   * Who the guard found the caller to be, when it checked a token: `token:<digest>` for a static token, `oauth:<sub>`
   * for an access token. Sessions, contexts and the request log use it; the token itself goes nowhere.
   */
  principal?: string | undefined;
  /** The kinds of request (`read`, `query`, `admin`) an access token's scopes allow; undefined for a static token. */
  grants?: ReadonlySet<'read' | 'query' | 'admin'> | undefined;
};

/** The fields a mount adds to a request's log record. */
export type RequestLogFields = { protocol?: string; protocolName?: string; taken?: string };

const EMPTY = Buffer.alloc(0);
const SAFE_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
const SAFE_BASE_URL =
  /^https?:\/\/(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?(?:\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?$/;

// Ids are cut from a pool of random bytes: `randomBytes(9)` per request cost 7.5 µs (measured), half of what the
// whole request costs the server, when every request gets an id for the request log.
const ID_BYTES = 9;
let idPool = Buffer.alloc(0);
let idOffset = 0;

/** A new request id: 12 random base64url characters. */
export function requestId(): string {
  if (idOffset + ID_BYTES > idPool.length) {
    idPool = randomBytes(ID_BYTES * 1024);
    idOffset = 0;
  }
  idOffset += ID_BYTES;
  return idPool.toString('base64url', idOffset - ID_BYTES, idOffset);
}

/** The first value of a header. */
export function header(request: Pick<EdgeRequest, 'headers'>, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The request's body: given, loaded (capped by the edge), or empty. */
export function bodyOf(request: EdgeRequest): Promise<Buffer> {
  if (request.body !== undefined) return Promise.resolve(request.body);
  return request.loadBody ? request.loadBody() : Promise.resolve(EMPTY);
}

/** The path without its query string or a trailing slash (`/wellknown/` is `/wellknown`). */
export function cleanPath(path: string): string {
  const query = path.indexOf('?');
  let clean = query === -1 ? path : path.slice(0, query);
  if (clean.length > 1 && clean.charCodeAt(clean.length - 1) === 47) clean = clean.slice(0, -1);
  return clean || '/';
}

/**
 * A request target as a URL whose path and query can be read, or `undefined` when it has none (answer 400). Never
 * throws: a target is a stranger's bytes, and `new URL('//', base)` throws (it reads `//x` as a host). An
 * origin-form target is taken as a path, `//x` included; an absolute-form one as it is.
 */
export function requestTarget(target: string | undefined): URL | undefined {
  try {
    return new URL(
      target === undefined || target.startsWith('/') ? `http://target.invalid${target ?? '/'}` : target,
      'http://target.invalid/',
    );
  } catch {
    return undefined;
  }
}

/** Whether a Host header is a plain `host[:port]`, safe to build a link from. */
export function isSafeHost(host: string | undefined): host is string {
  return host !== undefined && SAFE_HOST.test(host);
}

/**
 * The base URL links are built from: the public URL, else the adapter's, else `http://<Host>` when it is a plain
 * host; `undefined` when none is safe.
 */
export function baseUrlOf(
  request: Pick<EdgeRequest, 'headers' | 'baseUrl'>,
  publicUrl: string | undefined,
): string | undefined {
  if (publicUrl) return publicUrl.replace(/\/+$/, '');
  if (request.baseUrl !== undefined)
    return SAFE_BASE_URL.test(request.baseUrl) ? request.baseUrl.replace(/\/+$/, '') : undefined;
  const host = header(request, 'host');
  return isSafeHost(host) ? `http://${host}` : undefined;
}
