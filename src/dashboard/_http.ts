// Internal: what the agent's and the hub's dashboards share on the wire: who may see and act (the token rules),
// the page and its assets from the package, JSON answers, and the live feed (server-sent events).
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { TokenCheck } from '../http/_limits.js';

/** Where the page's files live: `assets/dashboard/` at the package root, the same from `src/` and `dist/`. */
const ASSETS_DIR = fileURLToPath(new URL('../../assets/dashboard/', import.meta.url));

const JSON_TYPE = 'application/json; charset=utf-8';

/** The page's Content-Security-Policy: its own scripts and styles only, no inline script, no frames, no forms posting away. */
export const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

const SECURITY_HEADERS = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', 'x-frame-options': 'DENY' };

/** What a request wants to do: load the page or its assets, read data, or change something. */
export type AccessKind = 'page' | 'read' | 'write';

/** Why a request is refused, or undefined when it may go on. */
export type Refusal = { status: 401 | 403; message: string } | undefined;

/** The message of a dashboard turned off for want of a token. */
export const NEEDS_TOKEN =
  'Dashboard off: this server listens beyond loopback and has no token. Start it with --token <secret> (AGORA_TOKENS), or listen on 127.0.0.1.';

/** The message of a request without a token whose Host is not loopback (a DNS-rebinding page, say). */
export const LOOPBACK_HOST_ONLY = 'Dashboard without a token: only requests addressed to localhost, 127.0.0.1 or [::1] are answered.';

/** The message of an approval or rejection on a server without a token. */
export const REVIEW_NEEDS_TOKEN = 'Approving or rejecting a routine needs a token: start the agent with --token <secret> (AGORA_TOKENS), then sign in.';

function isLoopback(address: string): boolean {
  const bare = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (bare === '::1') return true;
  return isIP(bare) === 4 && bare.startsWith('127.');
}

/** Whether a Host header names this machine: `localhost`, a 127/8 address or `[::1]`, with any port. */
export function isLoopbackHost(host: string | undefined): boolean {
  if (host === undefined) return false;
  const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d+$/, '');
  return name.toLowerCase() === 'localhost' || isLoopback(name);
}

/**
 * Whether the server that took this request listens on loopback only: judged by the address it is bound to
 * (a server on 0.0.0.0 is reachable from other machines, whoever asks), else by the address the request came in on.
 */
export function listensOnLoopback(incoming: IncomingMessage): boolean {
  const server = (incoming.socket as { server?: Server }).server;
  const address = server?.address();
  // A Unix socket (a string address) is reached from this machine only.
  if (typeof address === 'string') return true;
  const bound = (address as AddressInfo | null | undefined)?.address ?? incoming.socket.localAddress;
  return bound !== undefined && isLoopback(bound);
}

/**
 * The dashboard's token rules: without a token, only on loopback and read-only; beyond loopback a token is needed
 * to show anything; approving or rejecting always needs one. The page itself (the sign-in form) needs none.
 */
export class DashboardAccess {
  readonly #tokens: TokenCheck;

  constructor(tokens: readonly string[] = []) {
    this.#tokens = new TokenCheck(tokens);
  }

  /** Whether tokens are set (the page then asks for one). */
  get tokensEnabled(): boolean {
    return this.#tokens.enabled;
  }

  /** Why this request may not do `kind`, or undefined. */
  check(incoming: IncomingMessage, kind: AccessKind): Refusal {
    if (!this.#tokens.enabled) {
      if (!listensOnLoopback(incoming)) return { status: 403, message: NEEDS_TOKEN };
      // A web page can point its own host name at 127.0.0.1 (DNS rebinding): without a token, the Host must say loopback.
      if (!isLoopbackHost(incoming.headers.host)) return { status: 403, message: LOOPBACK_HOST_ONLY };
      return kind === 'write' ? { status: 403, message: REVIEW_NEEDS_TOKEN } : undefined;
    }
    if (kind === 'page') return undefined;
    const header = incoming.headers.authorization;
    return this.#tokens.accepts(Array.isArray(header) ? header[0] : header) ? undefined : { status: 401, message: 'Unauthorized: sign in with the agent\'s token' };
  }
}

/** Sends a JSON value with no caching. */
export function sendJson(response: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  response.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': String(Buffer.byteLength(body)), 'cache-control': 'no-store', ...SECURITY_HEADERS }).end(body);
}

/** Sends the spec's failure shape. */
export function sendFailure(response: ServerResponse, status: number, message: string, extra: Record<string, string> = {}): void {
  const body = JSON.stringify({ status: 'failure', error: message });
  response.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': String(Buffer.byteLength(body)), 'cache-control': 'no-store', ...SECURITY_HEADERS, ...extra }).end(body);
}

/** Sends a refusal: JSON for the API, a short page for the page itself. */
export function sendRefusal(response: ServerResponse, refusal: NonNullable<Refusal>, kind: AccessKind): void {
  if (kind !== 'page') return sendFailure(response, refusal.status, refusal.message, refusal.status === 401 ? { 'www-authenticate': 'Bearer' } : {});
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Agora dashboard</title></head><body><main><h1>Agora dashboard</h1><p>${escapeHtml(refusal.message)}</p></main></body></html>`;
  response.writeHead(refusal.status, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': CSP, 'cache-control': 'no-store', ...SECURITY_HEADERS }).end(body);
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

  /** Sends a named asset; false when the name is not one of them. */
  async send(response: ServerResponse, name: string, head: boolean): Promise<boolean> {
    const asset = this.#table.get(name);
    if (!asset) return false;
    let body = this.#cache.get(name);
    if (!body) {
      body = await readFile(asset.path);
      this.#cache.set(name, body);
    }
    const headers: Record<string, string> = { 'content-type': asset.type, 'content-length': String(body.length), 'cache-control': 'no-cache', ...SECURITY_HEADERS };
    if (asset.type.startsWith('text/html')) headers['content-security-policy'] = CSP;
    response.writeHead(200, headers).end(head ? undefined : body);
    return true;
  }
}

/** Live feeds open at once per dashboard; more are refused with 503 (each holds a connection). */
export const MAX_FEEDS = 32;
const HEARTBEAT_MS = 15_000;

/** The open live feeds (server-sent events) of one dashboard: each gets every message sent. */
export class EventFeeds {
  readonly #responses = new Set<ServerResponse>();
  #heartbeat: NodeJS.Timeout | undefined;

  /** How many feeds are open. */
  get size(): number {
    return this.#responses.size;
  }

  /** Opens a feed on this response (503 when too many are open); `first` is sent to it alone. */
  open(response: ServerResponse, first: { event: string; data: unknown }[], onClose: () => void): void {
    if (this.#responses.size >= MAX_FEEDS) return sendFailure(response, 503, 'Too many dashboard feeds open', { 'retry-after': '5' });
    // The connection ends with the feed: a server closing does not wait for it to go idle.
    response.shouldKeepAlive = false;
    response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no', ...SECURITY_HEADERS });
    response.flushHeaders();
    this.#responses.add(response);
    response.once('close', () => {
      this.#responses.delete(response);
      if (this.#responses.size === 0) this.#stopHeartbeat();
      onClose();
    });
    for (const message of first) response.write(frame(message.event, message.data));
    this.#heartbeat ??= setInterval(() => {
      for (const open of this.#responses) open.write(': keep-alive\n\n');
    }, HEARTBEAT_MS).unref();
  }

  /** Sends one message to every open feed. */
  send(event: string, data: unknown): void {
    if (this.#responses.size === 0) return;
    const text = frame(event, data);
    for (const response of this.#responses) response.write(text);
  }

  /** Ends every feed (the server is closing). */
  close(): void {
    this.#stopHeartbeat();
    for (const response of this.#responses) response.end();
    this.#responses.clear();
  }

  #stopHeartbeat(): void {
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }
}

// JSON never holds a raw newline, so one `data:` line carries it.
function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** Sends `…/dashboard` on to `…/dashboard/`, relative to where it was asked (any mount prefix). */
export function redirectToFolder(response: ServerResponse): void {
  response.writeHead(308, { location: 'dashboard/', 'content-length': '0', ...SECURITY_HEADERS }).end();
}

/** The dashboard-relative path of a request (`/dashboard/api/live` → `/api/live`), without its query string. */
export function subPath(url: string, prefix: string): string {
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return path.slice(prefix.length) || '/';
}
