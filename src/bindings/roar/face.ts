// The ROAR face (spec 0.3): HTTP routes under `/roar`, the WebSockets `/roar/ws` and `/roar/ws/stream` accepted through
// the edge, the agent's identity kept in its memory, signatures checked and replies signed, replays refused.
import type { KeyObject } from 'node:crypto';
import { AgoraError } from '../../errors.js';
import type { MountRoute } from '../../edge/mount.js';
import { baseUrlOf } from '../../edge/request.js';
import type { Face, FaceDefinition } from '../../faces/face.js';
import { FaceSessions } from '../../faces/sessions.js';
import { receiverStream, type StreamAnswer } from '../../faces/stream.js';
import type { RoarFaceDeps } from './answer.js';
import { RoarEvents, type RoarEventOptions } from './events.js';
import { roarFailure, roarHttp, roarSocketFailure } from './http.js';
import { loadIdentity, type RoarIdentity } from './identity.js';
import { MemoryReplayGuard, type ReplayGuard } from './replay.js';
import { publicKeyFromHex } from './signing.js';
import { RoarSockets, type RoarSocketOptions } from './ws.js';

/** Options of the ROAR face. */
export type RoarOptions = {
  /** HMAC secret: every ROAR message must be signed, replies are signed with it. */
  roarSecret?: string;
  /** DID → hex Ed25519 public key of peers allowed to sign with Ed25519 (the `--roar-trust` file's content). */
  roarTrust?: Record<string, string>;
  /** Remembers ROAR message ids (default: in this process; `RedisReplayGuard` to share it). */
  replay?: ReplayGuard;
  /** Streams answers; default: the receiver's pieces as it produces them. */
  stream?: StreamAnswer;
  /** Bounds of `GET /roar/events` (listeners, unread events, heartbeat). */
  roarEvents?: RoarEventOptions;
  /** Bounds of `/roar/ws` beyond the edge's socket caps (auth time, heartbeat, messages in flight). */
  roarSocket?: RoarSocketOptions;
};

/** The ROAR face, with the agent's ROAR identity (made on first use). */
export type RoarFace = Face & { identity(): Promise<RoarIdentity> };

const READ_ALLOW = 'GET, HEAD, OPTIONS';

/** ROAR's routes: health and the cards are public reads, `/roar/ws` checks its own auth frame, the rest needs the token. */
export const ROAR_ROUTES: readonly MountRoute[] = [
  { path: '/roar/health', public: 'read', allow: READ_ALLOW },
  { path: '/roar/card', public: 'read', allow: READ_ALLOW },
  { path: '/roar/agents', public: 'read', allow: READ_ALLOW },
  { path: '/roar/events', allow: READ_ALLOW },
  { path: '/roar/message', allow: 'POST, OPTIONS' },
  // Browsers cannot send a token on an upgrade: the socket asks for it in its first frame.
  { path: '/roar/ws', public: true, socket: true, allow: 'GET, OPTIONS' },
  // The task feed as ROAR's SDK `ws_subscribe` reads it: like `/roar/events`, the token (when set) on the upgrade.
  { path: '/roar/ws/stream', socket: true, name: 'events', allow: 'GET, OPTIONS' },
  { path: '/roar', prefix: true },
];

function trustMap(trust: Record<string, string> | undefined): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  for (const [did, hex] of Object.entries(trust ?? {})) {
    try {
      keys.set(did, publicKeyFromHex(hex));
    } catch (error) {
      throw new AgoraError(
        'INVALID_ARGUMENT',
        `ROAR trust: the key of ${did} is not a 64-hex-character Ed25519 public key`,
        { cause: error },
      );
    }
  }
  return keys;
}

/** The ROAR face. */
export const roarFace = {
  name: 'roar',
  create(context, options): RoarFace {
    const { now } = context;
    const sessions = new FaceSessions('roar', context.memory, { now });
    let identity: Promise<RoarIdentity> | undefined;
    // Once loaded, the identity itself: every ROAR message needs it, and awaiting even a settled promise costs a tick.
    let loaded: RoarIdentity | undefined;
    const loadOnce = () => {
      identity ??= loadIdentity(context.memory, context.name).then(
        (value) => (loaded = value),
        (error: unknown) => {
          identity = undefined;
          throw error;
        },
      );
      return identity;
    };
    const deps: RoarFaceDeps = {
      receiver: context.receiver,
      sessions,
      catalogue: context.catalogue,
      identity: () => loaded ?? loadOnce(),
      security: {
        ...(options.roarSecret !== undefined ? { secret: options.roarSecret } : {}),
        trust: trustMap(options.roarTrust),
        replay: options.replay ?? new MemoryReplayGuard({ now }),
        now,
      },
      description: context.description,
      ...(context.publicUrl !== undefined ? { publicUrl: context.publicUrl } : {}),
      maxBodyBytes: context.maxBodyBytes,
      logger: context.logger,
      stream: options.stream ?? receiverStream(context.receiver, sessions),
      tokensRequired: context.tokensRequired,
      oauth: context.oauth,
      events: new RoarEvents(options.roarEvents),
      now,
    };
    const sockets = new RoarSockets(deps, options.roarSocket);
    return {
      name: 'roar',
      routes: ROAR_ROUTES,
      handle: roarHttp(deps),
      upgrade(request) {
        const baseUrl = baseUrlOf(request, context.publicUrl) ?? 'http://localhost';
        if (request.route?.name === 'events')
          return {
            status: 101,
            headers: {},
            body: '',
            upgrade: { accept: (session) => sockets.acceptEvents(session) },
          };
        return {
          status: 101,
          headers: {},
          body: '',
          upgrade: { accept: (session) => sockets.accept(session, baseUrl) },
        };
      },
      failure: roarFailure,
      socketFailure: roarSocketFailure,
      close: () => sockets.close(),
      identity: loadOnce,
    };
  },
} satisfies FaceDefinition<RoarOptions, 'roar'>;
