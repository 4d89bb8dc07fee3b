// Internal: what the agent's and the hub's dashboards share on the wire: the page and its assets from the package,
// JSON answers and failures with the page's security headers, refusals, and the live feeds (server-sent events fed
// through the edge's FeedChannel: a feed that does not read is dropped, never buffered without bound).
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { FeedChannel, sseFrame } from '../edge/events.js';
import { eventStream, JSON_TYPE, type EdgeResponse } from '../edge/response.js';
import type { AccessKind, Refusal } from './access.js';

/** Where the page's files live: `assets/dashboard/` at the package root, the same from `src/` and `dist/`. */
const ASSETS_DIR = fileURLToPath(new URL('../../assets/dashboard/', import.meta.url));

/**
 * The page's Content-Security-Policy: its own scripts and styles only, no inline script, no frames, no forms posting
 * away.
 */
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

function jsonResponse(status: number, value: unknown, extra: Record<string, string> = {}): EdgeResponse {
  const body = JSON.stringify(value);
  return {
    status,
    headers: {
      'content-type': JSON_TYPE,
      'content-length': String(Buffer.byteLength(body)),
      'cache-control': 'no-store',
      ...SECURITY_HEADERS,
      ...extra,
    },
    body,
  };
}

/** A JSON value with no caching. */
export function sendJson(status: number, value: unknown): EdgeResponse {
  return jsonResponse(status, value);
}

/** The spec's failure shape, with the page's headers: the dashboards' `Mount.failure`. */
export function sendFailure(status: number, message: string, extra: Record<string, string> = {}): EdgeResponse {
  return jsonResponse(status, { status: 'failure', error: message }, extra);
}

/** A refusal: JSON for the API, a short page for the page itself. */
export function sendRefusal(refusal: NonNullable<Refusal>, kind: AccessKind): EdgeResponse {
  if (kind !== 'page')
    return sendFailure(refusal.status, refusal.message, refusal.status === 401 ? { 'www-authenticate': 'Bearer' } : {});
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Agora dashboard</title></head><body><main><h1>Agora dashboard</h1><p>${escapeHtml(refusal.message)}</p></main></body></html>`;
  return {
    status: refusal.status,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
      'content-security-policy': CSP,
      'cache-control': 'no-store',
      ...SECURITY_HEADERS,
    },
    body,
  };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

type Asset = { path: string; type: string };

const uplotDir = (): string => join(createRequire(import.meta.url).resolve('uplot/package.json'), '..', 'dist');

/** The files the page may load, by the name in its URL: nothing else is ever read. */
function assetTable(): Map<string, Asset> {
  const own = (name: string, type: string): [string, Asset] => [name, { path: join(ASSETS_DIR, name), type }];
  return new Map([
    own('agent.html', 'text/html; charset=utf-8'),
    own('hub.html', 'text/html; charset=utf-8'),
    own('dashboard.css', 'text/css; charset=utf-8'),
    own('common.js', 'text/javascript; charset=utf-8'),
    own('agent.js', 'text/javascript; charset=utf-8'),
    own('hub.js', 'text/javascript; charset=utf-8'),
    ['uplot.js', { path: join(uplotDir(), 'uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' }],
    ['uplot.css', { path: join(uplotDir(), 'uPlot.min.css'), type: 'text/css; charset=utf-8' }],
  ]);
}

/** Serves the page's files from the package, read once and kept (they are small and never change while running). */
export class AssetServer {
  readonly #table = assetTable();
  readonly #cache = new Map<string, Buffer>();

  /** A named asset, or undefined when the name is not one of them. */
  async answer(name: string): Promise<EdgeResponse | undefined> {
    const asset = this.#table.get(name);
    if (!asset) return undefined;
    let body = this.#cache.get(name);
    if (!body) {
      body = await readFile(asset.path);
      this.#cache.set(name, body);
    }
    const headers: Record<string, string> = {
      'content-type': asset.type,
      'content-length': String(body.length),
      'cache-control': 'no-cache',
      ...SECURITY_HEADERS,
    };
    if (asset.type.startsWith('text/html')) headers['content-security-policy'] = CSP;
    return { status: 200, headers, body };
  }
}

/** Live feeds open at once per dashboard; more are refused with 503 (each holds a connection). */
export const MAX_FEEDS = 32;

/**
 * Bytes a feed may leave unread in its queue (past what its connection buffers) before it is dropped; the page
 * reconnects.
 */
const MAX_QUEUED_BYTES = 1024 * 1024;

/** The open live feeds of one dashboard: each gets every message sent; one that does not read is dropped. */
export class EventFeeds {
  readonly #feeds = new Set<FeedChannel>();

  /** How many feeds are open. */
  get size(): number {
    return this.#feeds.size;
  }

  /**
   * Opens a feed (503 when too many are open); `first` (frames, see `sseFrame`) is sent to it alone; `onClose` runs
   * when it ends.
   */
  open(first: string[], onClose: () => void): EdgeResponse {
    if (this.#feeds.size >= MAX_FEEDS) return sendFailure(503, 'Too many dashboard feeds open', { 'retry-after': '5' });
    const feed: FeedChannel = new FeedChannel(MAX_QUEUED_BYTES, () => {
      this.#feeds.delete(feed);
      onClose();
    });
    this.#feeds.add(feed);
    for (const frame of first) feed.send(frame);
    return eventStream(feed, { 'cache-control': 'no-store', ...SECURITY_HEADERS });
  }

  /** Sends one message to every open feed (serialized once). */
  send(event: string, data: unknown): void {
    if (this.#feeds.size > 0) this.sendJson(event, JSON.stringify(data));
  }

  /** Sends one message already serialized as JSON to every open feed. */
  sendJson(event: string, text: string): void {
    const frame = sseFrame(event, text);
    for (const feed of [...this.#feeds]) feed.send(frame);
  }

  /** Ends every feed (the server is closing). */
  close(): void {
    for (const feed of [...this.#feeds]) feed.cancel();
  }
}

/** `…/dashboard` sent on to `…/dashboard/`, relative to where it was asked (any mount prefix). */
export function redirectToFolder(): EdgeResponse {
  return { status: 308, headers: { location: 'dashboard/', 'content-length': '0', ...SECURITY_HEADERS }, body: '' };
}

/** The dashboard-relative path of a request (`/dashboard/api/live` → `/api/live`), without its query string. */
export function subPath(url: string, prefix: string): string {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return path.slice(prefix.length) || '/';
}
