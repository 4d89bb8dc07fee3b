// Internal: the routes of spec §2, matched without a router (the hot path pays for none).

/** What a path names. */
export type RouteKind = 'root' | 'wellknown' | 'health' | 'ready' | 'metrics' | 'protocol' | 'conversation' | 'events';

/** A matched route: its kind, the rest of the path (hash or conversation id), its `Allow` header, whether reads skip auth. */
export type Route = { kind: RouteKind; param: string; allow: string; isPublic: boolean };

const GET_ALLOW = 'GET, HEAD, OPTIONS';
const ROOT: Route = { kind: 'root', param: '', allow: 'POST, OPTIONS', isPublic: false };
const WELLKNOWN: Route = { kind: 'wellknown', param: '', allow: GET_ALLOW, isPublic: true };
// Probes carry no data (a status word), and load balancers probe without tokens.
const HEALTH: Route = { kind: 'health', param: '', allow: GET_ALLOW, isPublic: true };
const READY: Route = { kind: 'ready', param: '', allow: GET_ALLOW, isPublic: true };
const METRICS: Route = { kind: 'metrics', param: '', allow: GET_ALLOW, isPublic: false };

/** The route a mount-relative path names, or undefined (a 404). */
export function matchRoute(rawPath: string): Route | undefined {
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
  if (path.startsWith('/protocols/')) return { kind: 'protocol', param: path.slice(11), allow: GET_ALLOW, isPublic: true };
  if (path.startsWith('/conversations/')) {
    // `GET /conversations/:id/events`: a streamed turn resumed.
    if (path.endsWith('/events')) return { kind: 'events', param: path.slice(15, -7), allow: 'GET, OPTIONS', isPublic: false };
    return { kind: 'conversation', param: path.slice(15), allow: 'POST, DELETE, OPTIONS', isPublic: false };
  }
  return undefined;
}

/** Whether a mount-relative path is one of the routes of spec §2 (adapters pass other paths on). */
export function isAgoraPath(path: string): boolean {
  return matchRoute(path) !== undefined;
}
