// A body built once and served many times: an ETag for conditional requests (304), and its gzip and Brotli encodings
// made once, off the event loop, when a client first accepts them.
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { header, type EdgeRequest } from './request.js';
import type { EdgeResponse } from './response.js';

const gzipAsync = promisify(gzip);
const brotliAsync = promisify(brotliCompress);

/** Bodies smaller than this are sent as they are (compression would save little and cost a thread-pool trip). */
const COMPRESS_ABOVE = 1024;

type Encoding = 'br' | 'gzip';

/**
 * A response body prepared once: its weak ETag is a hash of the bytes (the same across processes and restarts), and
 * each encoding is made at most once, in the thread pool.
 * @example const prepared = new PreparedBody(Buffer.from(text), 'application/json; charset=utf-8'); return prepared.respond(request);
 */
export class PreparedBody {
  readonly body: Buffer;
  readonly contentType: string;
  readonly etag: string;
  readonly #encoded = new Map<Encoding, Promise<Buffer>>();

  /** `digest`: a hash of the content when the caller has one already (else the body is hashed here). */
  constructor(body: Buffer, contentType: string, digest?: string) {
    this.body = body;
    this.contentType = contentType;
    this.etag = `W/"${(digest ?? createHash('sha256').update(body).digest('base64url')).slice(0, 32)}"`;
  }

  /** The body in an encoding (made once; quality 5 Brotli: most of the gain of 11 at a small part of its time). */
  encoded(encoding: Encoding): Promise<Buffer> {
    let encoded = this.#encoded.get(encoding);
    if (!encoded) {
      encoded =
        encoding === 'gzip'
          ? gzipAsync(this.body)
          : brotliAsync(this.body, {
              params: { [constants.BROTLI_PARAM_QUALITY]: 5, [constants.BROTLI_PARAM_SIZE_HINT]: this.body.length },
            });
      // A failed encoding is not kept: the next request tries again (or gets the plain body).
      encoded.catch(() => this.#encoded.delete(encoding));
      this.#encoded.set(encoding, encoded);
    }
    return encoded;
  }

  /**
   * The response to a GET or HEAD: 304 when `If-None-Match` names this body, else 200 with the body in the best
   * encoding `Accept-Encoding` allows (Brotli, then gzip), with `ETag`, `Vary` and `Cache-Control: no-cache` (a
   * client keeps it and asks again with its ETag).
   */
  async respond(request: Pick<EdgeRequest, 'headers' | 'method'>, cacheControl = 'no-cache'): Promise<EdgeResponse> {
    const headers: Record<string, string> = { etag: this.etag, vary: 'Accept-Encoding', 'cache-control': cacheControl };
    if (matches(header(request, 'if-none-match'), this.etag)) return { status: 304, headers, body: '' };
    const encoding = this.body.length > COMPRESS_ABOVE ? chooseEncoding(header(request, 'accept-encoding')) : undefined;
    let body = this.body;
    if (encoding) {
      try {
        body = await this.encoded(encoding);
        headers['content-encoding'] = encoding;
      } catch {
        body = this.body;
      }
    }
    headers['content-type'] = this.contentType;
    headers['content-length'] = String(body.length);
    return { status: 200, headers, body: request.method === 'HEAD' ? '' : body };
  }
}

/** Whether an `If-None-Match` value names `etag` (weak comparison, RFC 9110 §13.1.2; `*` matches any). */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const opaque = etag.replace(/^W\//, '');
  return ifNoneMatch.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || tag.replace(/^W\//, '') === opaque;
  });
}

/** The encoding to send: `br` or `gzip` when accepted with a q above 0 (Brotli preferred), else none. */
function chooseEncoding(acceptEncoding: string | undefined): Encoding | undefined {
  if (!acceptEncoding) return undefined;
  const accepted = new Set<string>();
  for (const part of acceptEncoding.slice(0, 256).split(',')) {
    const [name, ...parameters] = part.trim().toLowerCase().split(';');
    const q = parameters.map((parameter) => parameter.trim()).find((parameter) => parameter.startsWith('q='));
    if (q !== undefined && !(Number(q.slice(2)) > 0)) continue;
    if (name) accepted.add(name);
  }
  if (accepted.has('br')) return 'br';
  if (accepted.has('gzip') || accepted.has('*')) return 'gzip';
  return undefined;
}
