// The faces: other protocols' endpoints (ROAR, OAP, A2A) mapped onto one Agora receiver, as one framework-free
// handler the HTTP core (or any adapter) calls before its own routes, plus the ROAR WebSocket for node:http.
import type { KeyObject } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import { AgoraError } from '../errors.js';
import { consoleLogger, type Logger } from '../log.js';
import type { AgentMemory } from '../memory/file.js';
import type { ReceiverApi } from '../receiver.js';
import { A2A_RPC_PATH, a2aCard } from './a2a/card.js';
import { createA2aRpc } from './a2a/jsonrpc.js';
import { SessionMap } from './ask.js';
import { createCatalog } from './catalog.js';
import { createOapFace } from './oap.js';
import { RoarEvents, type RoarEventOptions } from './roar/events.js';
import { createRoarFace, type RoarFaceDeps } from './roar/face.js';
import { loadIdentity, type RoarIdentity } from './roar/identity.js';
import { MemoryReplayGuard, type ReplayGuard } from './roar/replay.js';
import { publicKeyFromHex } from './roar/signing.js';
import { attachRoarWebSocket, type RoarSocketOptions } from './roar/ws.js';
import { receiverStream, type StreamAnswer } from './stream.js';
import { baseUrlOf, cleanPath, DEFAULT_FACE_BODY_BYTES, header, json, tokenChecker, type FaceRequest, type FaceResponse } from './_http.js';

export type { FaceRequest, FaceResponse } from './_http.js';
export type { ReplayGuard } from './roar/replay.js';
export type { StreamAnswer, StreamEvent } from './stream.js';

/** The faces an agent can show; `agora` is the Agora endpoints themselves (served by the HTTP core). */
export const FACE_NAMES = ['agora', 'roar', 'oap', 'a2a'] as const;
/** One face's name. */
export type FaceName = (typeof FACE_NAMES)[number];

/** Options of {@link createFaces}. */
export type FacesOptions = {
  /** Which faces answer (default all). `agora` is ignored here. */
  faces?: readonly FaceName[];
  /** The agent's name (ROAR display name, OAP agent_id, A2A card name). */
  name: string;
  description?: string;
  /** Agent version shown on the A2A card (default `1.0.0`). */
  version?: string;
  /** Where the ROAR identity is kept (the receiver's memory, so every process agrees). */
  memory: AgentMemory;
  /** Bearer tokens, as on the Agora endpoints; cards and health stay public. */
  tokens?: string[];
  /** HMAC secret: every ROAR message must be signed, replies are signed with it. */
  roarSecret?: string;
  /** DID → hex Ed25519 public key of peers allowed to sign with Ed25519 (the `--roar-trust` file's content). */
  roarTrust?: Record<string, string>;
  /** Remembers ROAR message ids (default: in this process; `RedisReplayGuard` to share it). */
  replay?: ReplayGuard;
  /** Streams answers; default: the whole reply as one delta (until the receiver streams). */
  stream?: StreamAnswer;
  publicUrl?: string;
  maxBodyBytes?: number;
  /** The shared rate limit: seconds to wait, or 0 when this request may go on. */
  rateLimit?: (remoteAddress: string | undefined) => number | Promise<number>;
  logger?: Logger;
  /** Clock in Unix milliseconds. */
  now?: () => number;
  /** Bounds of `GET /roar/events` (listeners, unread events, heartbeat). */
  roarEvents?: RoarEventOptions;
};

/** The faces' handler and WebSocket hook. */
export type Faces = {
  /** Answers a face path; `undefined` for any other path (the Agora routes, say). */
  handle(request: FaceRequest): Promise<FaceResponse | undefined>;
  /** Serves `/roar/ws` on a node:http server; returns its stopper. */
  attachWebSocket(server: Server, options?: RoarSocketOptions): () => Promise<void>;
  /** The agent's ROAR identity (made on first use). */
  identity(): Promise<RoarIdentity>;
};

/** Which face a path is, and whether it answers without a token. */
type Route = { face: 'roar' | 'oap' | 'a2a'; isPublic: boolean };

function trustMap(trust: Record<string, string> | undefined): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  for (const [did, hex] of Object.entries(trust ?? {})) {
    try {
      keys.set(did, publicKeyFromHex(hex));
    } catch (error) {
      throw new AgoraError('INVALID_ARGUMENT', `ROAR trust: the key of ${did} is not a 64-hex-character Ed25519 public key`, { cause: error });
    }
  }
  return keys;
}

/**
 * The ROAR, OAP and A2A faces of a receiver, as one framework-free handler (mount it before the Agora routes).
 * @example const faces = createFaces(receiver, { name: receiver.name, memory: receiver.memory }); const response = await faces.handle(request) ?? await core(request);
 */
export function createFaces(receiver: ReceiverApi, options: FacesOptions): Faces {
  const enabled = new Set<FaceName>(options.faces ?? FACE_NAMES);
  const logger = options.logger ?? consoleLogger();
  const now = options.now ?? Date.now;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_FACE_BODY_BYTES;
  const tokens = tokenChecker(options.tokens ?? []);
  const sessions = new SessionMap({ now });
  const catalog = createCatalog(receiver);
  const stream = options.stream ?? receiverStream(receiver, sessions);
  let identity: Promise<RoarIdentity> | undefined;
  // Once loaded, the identity itself: every ROAR message needs it, and awaiting even a settled promise costs a tick.
  let loaded: RoarIdentity | undefined;
  const loadOnce = () => {
    identity ??= loadIdentity(options.memory, options.name).then(
      (value) => (loaded = value),
      (error: unknown) => {
        identity = undefined;
        throw error;
      },
    );
    return identity;
  };
  const description = options.description ?? '';
  const roarDeps: RoarFaceDeps = {
    receiver,
    sessions,
    catalog,
    identity: () => loaded ?? loadOnce(),
    security: { ...(options.roarSecret !== undefined ? { secret: options.roarSecret } : {}), trust: trustMap(options.roarTrust), replay: options.replay ?? new MemoryReplayGuard({ now }), now },
    description,
    ...(options.publicUrl !== undefined ? { publicUrl: options.publicUrl } : {}),
    maxBodyBytes,
    logger,
    stream,
    events: new RoarEvents(options.roarEvents),
    now,
  };
  const roar = createRoarFace(roarDeps);
  const oap = createOapFace({ receiver, sessions, catalog, name: options.name, description, maxBodyBytes, logger, now });
  const rpc = createA2aRpc({ stream, maxBodyBytes, logger, now });

  const unauthorized = (path: string): FaceResponse => {
    const body = path.startsWith('/roar/') ? { error: 'unauthorized', message: 'Unauthorized' } : path === A2A_RPC_PATH ? { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Unauthorized' } } : { error: 'unauthorized', detail: 'Unauthorized' };
    return json(401, body, { 'www-authenticate': 'Bearer' });
  };

  function route(path: string, method: string): Route | undefined {
    if (enabled.has('roar') && path.startsWith('/roar/')) return { face: 'roar', isPublic: roar.isPublic(path) };
    if (enabled.has('oap') && (path === '/invoke' || (path === '/' && (method === 'GET' || method === 'HEAD')))) return { face: 'oap', isPublic: path === '/' };
    if (enabled.has('a2a') && (path === '/.well-known/agent-card.json' || path === '/.well-known/agent.json' || path === A2A_RPC_PATH)) return { face: 'a2a', isPublic: path !== A2A_RPC_PATH };
    return undefined;
  }

  // Not async itself: a face's promise is handed back as it is (an async function returning a promise costs ticks).
  function handle(request: FaceRequest): Promise<FaceResponse | undefined> {
    const path = cleanPath(request.path);
    const matched = route(path, request.method);
    if (!matched) return Promise.resolve(undefined);
    if (options.rateLimit) return limited(options.rateLimit, request, path, matched);
    return answer(request, path, matched);
  }

  async function limited(limit: NonNullable<FacesOptions['rateLimit']>, request: FaceRequest, path: string, matched: Route): Promise<FaceResponse | undefined> {
    const retryAfter = await limit(request.remoteAddress);
    if (retryAfter > 0) return json(429, { error: 'rate_limited', message: 'Too many requests' }, { 'retry-after': String(retryAfter) });
    return answer(request, path, matched);
  }

  function answer(request: FaceRequest, path: string, matched: Route): Promise<FaceResponse | undefined> {
    if (!matched.isPublic && !tokens.checkHeader(request)) return Promise.resolve(unauthorized(path));
    if (matched.face === 'roar') return roar.handle(request, path);
    return otherFace(request, path, matched);
  }

  async function otherFace(request: FaceRequest, path: string, matched: Route): Promise<FaceResponse | undefined> {
    if (matched.face === 'oap') return oap.handle(request, path);
    if (path === A2A_RPC_PATH) {
      if (request.method !== 'POST') return json(405, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'POST JSON-RPC requests' } }, { allow: 'POST' });
      const version = header(request, 'a2a-version');
      if (version !== undefined && version !== '' && !/^(?:0\.3|1\.0)(?:\.\d+)?$/.test(version.trim())) {
        return json(200, { jsonrpc: '2.0', id: null, error: { code: -32009, message: `A2A version ${version.slice(0, 20)} is not supported (1.0, 0.3)` } });
      }
      const response = await rpc(request);
      response.headers['a2a-version'] = '1.0';
      return response;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') return json(405, { error: 'method_not_allowed' }, { allow: 'GET, HEAD' });
    const card = a2aCard({ name: options.name, description, version: options.version ?? '1.0.0', baseUrl: baseUrlOf(request, options.publicUrl), protocols: await catalog(), tokens: tokens.required });
    return json(200, card, { 'cache-control': 'public, max-age=60' });
  }

  return {
    handle,
    identity: loadOnce,
    attachWebSocket(server, socketOptions) {
      return attachRoarWebSocket(
        server,
        { ...roarDeps, checkToken: tokens.check, tokensRequired: tokens.required, baseUrl: (request: IncomingMessage) => baseUrlOf({ method: 'GET', path: '/', headers: request.headers, body: undefined }, options.publicUrl) },
        socketOptions,
      );
    },
  };
}
