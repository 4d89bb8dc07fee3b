// Internal: the request/response shapes the faces answer, and the helpers every face shares.
import { createHash, timingSafeEqual } from 'node:crypto';
import { AgoraError } from '../errors.js';

/** A request as a face sees it; the HTTP core's `CoreRequest` is this shape with a log id, so one object serves both. */
export type FaceRequest = {
  method: string;
  /** Path relative to the mount point, still percent-encoded; a query string may follow. */
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The raw body, `undefined` when none (or when `loadBody` reads it). */
  body: Buffer | undefined;
  /** Reads the body on demand (after routing and auth, so refused bodies are never read). */
  loadBody?: () => Promise<Buffer>;
  remoteAddress?: string;
  /** Base URL of the mount point, e.g. `https://example.com/agora`. */
  baseUrl?: string;
  /** Aborted when the client goes away, passed on to the receiver. */
  signal?: AbortSignal;
};

/** A face's answer: a whole body, or a stream of chunks (Server-Sent Events) written as they come. */
export type FaceResponse = { status: number; headers: Record<string, string>; body: string | AsyncIterable<string> };

/** Default largest request body a face reads: 1 MiB, as the HTTP core. */
export const DEFAULT_FACE_BODY_BYTES = 1024 * 1024;

const JSON_TYPE = 'application/json; charset=utf-8';
const SAFE_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
const SAFE_BASE_URL = /^https?:\/\/(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?(?:\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?$/;

/** A JSON response with its length; `text` is already serialized. */
export function jsonText(status: number, text: string, headers: Record<string, string> = {}, byteLength = Buffer.byteLength(text)): FaceResponse {
  return { status, headers: { 'content-type': JSON_TYPE, 'content-length': String(byteLength), ...headers }, body: text };
}

/** A JSON response whose text is ASCII (ROAR's canonical JSON escapes the rest): its length is its byte count. */
export function asciiJsonText(status: number, text: string): FaceResponse {
  return jsonText(status, text, {}, text.length);
}

/** A JSON response from a value. */
export function json(status: number, value: unknown, headers: Record<string, string> = {}): FaceResponse {
  return jsonText(status, JSON.stringify(value), headers);
}

/** The first value of a header. */
export function header(request: Pick<FaceRequest, 'headers'>, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The path without its query string or a trailing slash. */
export function cleanPath(path: string): string {
  const query = path.indexOf('?');
  let clean = query === -1 ? path : path.slice(0, query);
  if (clean.length > 1 && clean.endsWith('/')) clean = clean.slice(0, -1);
  return clean || '/';
}

/** Reads the body (given, or loaded) with the size cap: past it, `AgoraError('REQUEST_TOO_LARGE')`. */
export async function readFaceBody(request: FaceRequest, maxBytes: number): Promise<Buffer> {
  const body = request.body ?? (request.loadBody ? await request.loadBody() : Buffer.alloc(0));
  if (body.length > maxBytes) throw new AgoraError('REQUEST_TOO_LARGE');
  return body;
}

/** Decodes a body as UTF-8 text, a leading BOM dropped. */
export function bodyText(body: Buffer): string {
  const text = body.toString('utf8');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

/** A bearer-token check in constant time (digests make every comparison the same length); no tokens = open. */
export function tokenChecker(tokens: readonly string[]): { required: boolean; check(token: string | undefined): boolean; checkHeader(request: Pick<FaceRequest, 'headers'>): boolean } {
  const digests = tokens.map(sha256);
  const check = (token: string | undefined): boolean => {
    if (digests.length === 0) return true;
    const digest = sha256(token ?? '');
    let ok = false;
    for (const candidate of digests) ok = timingSafeEqual(digest, candidate) || ok;
    return ok && token !== undefined;
  };
  return {
    required: digests.length > 0,
    check,
    checkHeader(request) {
      if (digests.length === 0) return true;
      const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header(request, 'authorization') ?? '');
      return check(match?.[1]);
    },
  };
}

/** The base URL links are built from: the public URL, else the adapter's, else `http://<Host>` when it is a plain host. */
export function baseUrlOf(request: FaceRequest, publicUrl: string | undefined): string {
  if (publicUrl) return publicUrl.replace(/\/+$/, '');
  if (request.baseUrl !== undefined && SAFE_BASE_URL.test(request.baseUrl)) return request.baseUrl.replace(/\/+$/, '');
  const host = header(request, 'host');
  return host !== undefined && SAFE_HOST.test(host) ? `http://${host}` : 'http://localhost';
}
