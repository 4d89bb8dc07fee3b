// Internal: what a Redis URL names (one server, a cluster's seed nodes, a Sentinel group) and the connection
// settings its query carries beside the stores' own (`ca`, `waitReplicas`, `waitMs`).
import { readFileSync } from 'node:fs';
import { AgoraError } from './errors.js';

/** A node's address. */
export type RedisNode = { host: string; port: number };

/** The settings of every kind of target: credentials, TLS with an optional CA, replicas a durable write waits for. */
type Common = {
  username?: string;
  password?: string;
  /** TLS (`rediss…`): the CA bundle's PEM when a `ca` file is named, else the system's CAs. */
  tls?: { ca?: Buffer };
  /** Replicas a turn's write waits for (`WAIT`); 0 answers at the master's write. */
  waitReplicas: number;
  /** How long a write waits for its replicas, ms. */
  waitMs: number;
  /** Query parameters left for ioredis (`family`, `sentinelPassword`…). */
  extra: Record<string, string>;
};

/** Where a Redis URL points. */
export type RedisTarget =
  | (Common & { kind: 'single'; url: string })
  | (Common & { kind: 'cluster'; nodes: RedisNode[] })
  | (Common & { kind: 'sentinel'; sentinels: RedisNode[]; name: string; db?: number });

/** Default of `waitMs`: long enough for a replica on the same network, well inside the command timeout. */
export const DEFAULT_WAIT_MS = 500;
/** The most `waitMs` may be: a WAIT must end before the 2 s command timeout of its pipeline. */
export const MAX_WAIT_MS = 1500;
/** The most replicas a write may wait for. */
export const MAX_WAIT_REPLICAS = 16;

/** The URL schemes of a Redis store. */
export const REDIS_SCHEMES = /^(rediss?|rediss?-cluster|rediss?-sentinel):\/\//;

function fail(message: string): never {
  throw new AgoraError('INVALID_ARGUMENT', `store: ${message}`);
}

function integer(name: string, value: string, min: number, max: number): number {
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < min || number > max)
    fail(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`);
  return number;
}

function nodes(text: string, defaultPort: number): RedisNode[] {
  return text.split(',').map((item) => {
    const match = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(item.trim());
    if (!match) fail(`not a host[:port]: ${JSON.stringify(item)}`);
    const port = match[2] === undefined ? defaultPort : integer('port', match[2], 1, 65535);
    return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
  });
}

/**
 * Reads a Redis URL: `redis[s]://[user:password@]host:port/db`, `redis[s]-cluster://host:port[,host:port…]`,
 * `redis[s]-sentinel://host:port[,host:port…]/<master>[/db]`; the query's `ca` (a PEM file, read here),
 * `waitReplicas` and `waitMs` are taken out. Failures are AgoraError('INVALID_ARGUMENT') starting `store:`, never
 * echoing a password.
 */
export function parseRedisTarget(text: string): RedisTarget {
  const match = /^(rediss?)(-cluster|-sentinel)?:\/\/(?:([^@/?#]*)@)?([^/?#]+)(\/[^?#]*)?(?:\?([^#]*))?$/.exec(text);
  if (!match) fail('not a valid redis:// URL');
  const [, scheme, mode, userinfo, hosts, path = '', search = ''] = match;
  const query = new URLSearchParams(search);
  const take = (name: string) => {
    const value = query.get(name);
    query.delete(name);
    return value;
  };
  const caFile = take('ca');
  const replicasText = take('waitReplicas');
  const waitText = take('waitMs');
  // Cluster and Sentinel exist to survive a lost master: by default a turn waits for one replica there.
  const waitReplicas =
    replicasText === null ? (mode ? 1 : 0) : integer('waitReplicas', replicasText, 0, MAX_WAIT_REPLICAS);
  const waitMs = waitText === null ? DEFAULT_WAIT_MS : integer('waitMs', waitText, 1, MAX_WAIT_MS);
  let ca: Buffer | undefined;
  if (caFile !== null) {
    if (scheme !== 'rediss') fail('ca needs a TLS URL (rediss://…)');
    try {
      ca = readFileSync(caFile);
    } catch (error) {
      fail(`cannot read the CA file ${JSON.stringify(caFile)}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`);
    }
  }
  const common: Common = { waitReplicas, waitMs, extra: {}, tls: scheme === 'rediss' ? { ca } : undefined };
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':');
    const decode = (part: string) => {
      try {
        return decodeURIComponent(part);
      } catch {
        return fail('the user or password of the URL is not valid percent-encoding');
      }
    };
    if (colon < 0) common.password = decode(userinfo);
    else {
      if (colon > 0) common.username = decode(userinfo.slice(0, colon));
      common.password = decode(userinfo.slice(colon + 1));
    }
  }
  if (!mode) {
    try {
      new URL(text);
    } catch {
      fail('not a valid redis:// URL');
    }
    const rest = query.toString();
    return {
      ...common,
      kind: 'single',
      url: `${scheme}://${text.slice(scheme!.length + 3).split(/[?#]/)[0]}${rest ? `?${rest}` : ''}`,
    };
  }
  for (const [name, value] of query) common.extra[name] = value;
  if (mode === '-cluster') {
    if (path && path !== '/') fail('a cluster URL has no path (a cluster has one database)');
    return { ...common, kind: 'cluster', nodes: nodes(hosts!, 6379) };
  }
  const [name, db, ...more] = path.split('/').slice(1);
  if (!name || more.length > 0) fail('a Sentinel URL ends with /<master name>[/db]');
  return {
    ...common,
    kind: 'sentinel',
    sentinels: nodes(hosts!, 26379),
    name: decodeURIComponent(name),
    db: db ? integer('db', db, 0, 1e6) : undefined,
  };
}
