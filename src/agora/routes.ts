// The routes of spec §2: declared to the edge (which routes by them and knows which are public), and matched again
// here only for the parameter of the two prefix routes (a hash, a conversation id).
import type { MountRoute } from '../edge/mount.js';

/** What a path names. */
export type RouteKind = 'root' | 'wellknown' | 'health' | 'ready' | 'metrics' | 'protocol' | 'conversation' | 'events';

/** A matched route: its kind, the rest of the path (hash or conversation id), its `Allow` header. */
export type AgoraRoute = { kind: RouteKind; param: string; allow: string };

const GET_ALLOW = 'GET, HEAD, OPTIONS';

/** The Agora routes as the edge routes them; probes and documents are public reads (load balancers hold no token). */
export const AGORA_ROUTES: readonly MountRoute[] = [
  { path: '/', name: 'root', methods: ['POST', 'OPTIONS'], allow: 'POST, OPTIONS' },
  { path: '/wellknown', public: 'read', allow: GET_ALLOW },
  { path: '/.wellknown', public: 'read', allow: GET_ALLOW },
  { path: '/health', public: 'read', allow: GET_ALLOW },
  { path: '/ready', public: 'read', allow: GET_ALLOW },
  { path: '/metrics', allow: GET_ALLOW },
  { path: '/protocols', prefix: true, public: 'read', allow: GET_ALLOW },
  // GET for `/conversations/:id/events` (a stream resumed): a browser's preflight of it is answered with it.
  { path: '/conversations', prefix: true, allow: 'GET, POST, DELETE, OPTIONS' },
];

const ROOT: AgoraRoute = { kind: 'root', param: '', allow: 'POST, OPTIONS' };
const WELLKNOWN: AgoraRoute = { kind: 'wellknown', param: '', allow: GET_ALLOW };
const HEALTH: AgoraRoute = { kind: 'health', param: '', allow: GET_ALLOW };
const READY: AgoraRoute = { kind: 'ready', param: '', allow: GET_ALLOW };
const METRICS: AgoraRoute = { kind: 'metrics', param: '', allow: GET_ALLOW };

/** The route a mount-relative path names, or undefined (a 404). */
export function matchRoute(rawPath: string): AgoraRoute | undefined {
  let path = rawPath;
  const query = path.indexOf('?');
  if (query !== -1) path = path.slice(0, query);
  // Liberal: `/wellknown/` is `/wellknown`.
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
  switch (path) {
    case '':
    case '/':
      return ROOT;
    case '/wellknown':
    case '/.wellknown':
      return WELLKNOWN;
    case '/health':
      return HEALTH;
    case '/ready':
      return READY;
    case '/metrics':
      return METRICS;
  }
  // The whole rest is the hash: an unencoded base64 `/` is accepted too.
  if (path.startsWith('/protocols/')) return { kind: 'protocol', param: path.slice(11), allow: GET_ALLOW };
  if (path.startsWith('/conversations/')) {
    // `GET /conversations/:id/events`: a streamed turn resumed.
    if (path.endsWith('/events')) return { kind: 'events', param: path.slice(15, -7), allow: 'GET, OPTIONS' };
    return { kind: 'conversation', param: path.slice(15), allow: 'POST, DELETE, OPTIONS' };
  }
  return undefined;
}

/** Whether a mount-relative path is one of the routes of spec §2. */
export function isAgoraPath(path: string): boolean {
  return matchRoute(path) !== undefined;
}
