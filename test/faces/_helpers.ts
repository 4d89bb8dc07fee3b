import { agoraMount } from '../../src/agora/handler.js';
import { AgoraError } from '../../src/errors.js';
import type { RateLimitOptions } from '../../src/edge/guard.js';
import { compose, DEFAULT_MAX_BODY_BYTES, type Edge, type MountedRequest } from '../../src/edge/mount.js';
import { listen, type ListenOptions, type RunningServer } from '../../src/edge/node.js';
import type { EdgeRequest } from '../../src/edge/request.js';
import type { EdgeResponse } from '../../src/edge/response.js';
import { facesFor } from '../../src/bindings/faces.js';
import { type Face, type FacesConfig, type RoarFace, type RoarIdentity } from '../../src/exports/faces.js';
import type { Logger } from '../../src/log.js';
import { InMemoryMemory } from '../../src/memory/file.js';
import type { ReceiverApi } from '../../src/receiver.js';
import type { FollowUpRequest, QueryRequest, SuccessResponse } from '../../src/schemas.js';

export const PROTOCOL_HASH = 'a'.repeat(40);
export const PROTOCOL_TEXT =
  '---\nname: Unit conversion\ndescription: Converts a value between units.\nmultiround: false\n---\nSend {"value": number, "from": string, "to": string}.\n';

/** A receiver double: routines answer the one protocol, natural language echoes with the turn number. */
export function fakeReceiver(): ReceiverApi & { queries: QueryRequest[]; followUps: [string, FollowUpRequest][] } {
  let next = 0;
  const turns = new Map<string, number>();
  const queries: QueryRequest[] = [];
  const followUps: [string, FollowUpRequest][] = [];
  return {
    queries,
    followUps,
    async query(request) {
      queries.push(request);
      if (request.protocolHash === 'bad') throw new AgoraError('UNSUPPORTED_PROTOCOL');
      if (request.protocolHash === 'crash') throw new Error('secret internals');
      const body = request.protocolHash ? { converted: true, input: request.body } : `turn 1: ${String(request.body)}`;
      if (!request.multiround) return { status: 'success', body };
      const id = `conv${++next}`;
      turns.set(id, 1);
      return { status: 'success', body, conversationId: id, conversationExpires: Math.floor(Date.now() / 1000) + 300 };
    },
    async followUp(id, request) {
      followUps.push([id, request]);
      const turn = turns.get(id);
      if (turn === undefined) throw new AgoraError('CONVERSATION_NOT_FOUND');
      turns.set(id, turn + 1);
      return {
        status: 'success',
        body: `turn ${turn + 1}: ${String(request.body)}`,
        conversationId: id,
        conversationExpires: Math.floor(Date.now() / 1000) + 300,
      } satisfies SuccessResponse;
    },
    async end() {},
    async wellknown() {
      return { [PROTOCOL_HASH]: [`/protocols/${PROTOCOL_HASH}`] };
    },
    async document(hash) {
      return hash === PROTOCOL_HASH ? PROTOCOL_TEXT : undefined;
    },
    async metrics() {
      return '';
    },
    capabilities: {},
  };
}

/** What a test sets: the faces' config, and the edge's guard they are composed behind. */
export type FaceTestOptions = FacesConfig & {
  tokens?: string[];
  rateLimit?: RateLimitOptions;
  maxBodyBytes?: number;
  corsOrigins?: string[];
  logger?: Logger;
  now?: () => number;
};

/** The faces composed after the Agora mount behind one edge, as an agent composes them. */
export type TestFaces = {
  faces: Face[];
  edge: Edge;
  /** A request through the edge, answered by a face; `undefined` when no face takes it (the Agora routes, any other path). */
  handle(request: EdgeRequest): Promise<EdgeResponse | undefined>;
  /** The ROAR face's identity. */
  identity(): Promise<RoarIdentity>;
};

const QUIET: Logger = { info() {}, warn() {}, error() {} };

/** Faces over the fake receiver (or `receiver`), composed as `compose([agoraMount(receiver), ...faces])`, with a quiet logger. */
export function makeFaces(options: FaceTestOptions = {}, receiver: ReceiverApi = fakeReceiver()): TestFaces {
  const {
    tokens,
    rateLimit,
    maxBodyBytes = DEFAULT_MAX_BODY_BYTES,
    corsOrigins,
    logger = QUIET,
    now,
    ...config
  } = options;
  const faces = facesFor(
    receiver,
    {
      name: 'Test agent',
      description: 'Converts units.',
      memory: new InMemoryMemory(),
      ...config,
      roarSocket: { authTimeoutMs: 200, ...config.roarSocket },
    },
    { maxBodyBytes, tokensRequired: (tokens?.length ?? 0) > 0, logger, ...(now ? { now } : {}) },
  );
  const edge = compose([agoraMount(receiver, { maxBodyBytes, logger }), ...faces], {
    ...(tokens ? { tokens } : {}),
    ...(rateLimit ? { rateLimit } : {}),
    ...(corsOrigins ? { corsOrigins } : {}),
    maxBodyBytes,
    logger,
  });
  const roar = faces.find((face): face is RoarFace => face.name === 'roar');
  return {
    faces,
    edge,
    async handle(request) {
      if (!edge.claims(request.method, request.path)) return undefined;
      const routed: MountedRequest = request;
      const response = await edge.handle(routed);
      return routed.mount?.name === 'agora' ? undefined : response;
    },
    identity() {
      if (roar === undefined) throw new Error('The ROAR face is not among these faces');
      return roar.identity();
    },
  };
}

/** The faces' edge on a throwaway node:http server on port 0 (WebSockets included). */
export async function serveFaces(faces: TestFaces, options: ListenOptions = {}): Promise<RunningServer> {
  return listen(faces.edge, { port: 0, host: '127.0.0.1', logger: QUIET, ...options });
}
