// The A2A face (1.0 and 0.3: each method name is one version's, answered in its shapes): the agent card at the
// well-known paths, JSON-RPC at `POST /a2a`. Every failure, the edge's 401, 413 and 429 included, is a JSON-RPC error
// with its HTTP status kept.
import type { MountRoute } from '../../edge/mount.js';
import { baseUrlOf, cleanPath, header } from '../../edge/request.js';
import { json, type EdgeResponse } from '../../edge/response.js';
import { ask } from '../../faces/ask.js';
import type { Face, FaceDefinition } from '../../faces/face.js';
import { FaceSessions } from '../../faces/sessions.js';
import { receiverStream, type StreamAnswer } from '../../faces/stream.js';
import { A2A_RPC_PATH, a2aCard } from './card.js';
import { A2A_ERRORS, createA2aRpc, rpcError } from './jsonrpc.js';

/** Options of the A2A face. */
export type A2aOptions = {
  /** Agent version shown on the A2A card (default `1.0.0`). */
  version?: string;
  /** Streams answers; default: the receiver's pieces as it produces them. */
  stream?: StreamAnswer;
};

const READ_ALLOW = 'GET, HEAD, OPTIONS';
const SUPPORTED_VERSION = /^(?:0\.3|1\.0)(?:\.\d+)?$/;

/** A2A's routes: the cards are public reads; `/a2a` (and anything under it) needs the token when tokens are set. */
export const A2A_ROUTES: readonly MountRoute[] = [
  { path: '/.well-known/agent-card.json', name: 'card', public: 'read', allow: READ_ALLOW },
  { path: '/.well-known/agent.json', name: 'card', public: 'read', allow: READ_ALLOW },
  { path: A2A_RPC_PATH, prefix: true, name: 'rpc', allow: 'POST, OPTIONS' },
];

// The JSON-RPC code of an HTTP refusal: JSON-RPC and A2A name no transport errors, so a refused request is an
// invalid request, a server-side failure an internal error, and a rate limit the first implementation-defined
// server error (A2A's own codes start at -32001).
function rpcCodeOf(status: number): number {
  if (status === 429) return -32000;
  if (status === 415) return A2A_ERRORS.CONTENT_TYPE_NOT_SUPPORTED;
  return status >= 500 ? A2A_ERRORS.INTERNAL : A2A_ERRORS.INVALID_REQUEST;
}

/** A failure as A2A's JSON-RPC error `{jsonrpc: '2.0', id: null, error: {code, message}}`, its HTTP status kept. */
export function a2aFailure(status: number, message: string): EdgeResponse {
  return rpcError(status, null, rpcCodeOf(status), message);
}

/** The A2A face. */
export const a2aFace: FaceDefinition<A2aOptions, 'a2a'> = {
  name: 'a2a',
  create(context, options): Face {
    const shared = {
      tokensRequired: context.tokensRequired,
      maxBodyBytes: context.maxBodyBytes,
      logger: context.logger,
      now: context.now,
    };
    // A stream of the caller's own answers everything and keeps its own sessions. The receiver's keeps them here,
    // and a blocking call asks the receiver directly, without the stream's machinery.
    const sessions = new FaceSessions('a2a', context.memory, { now: context.now });
    const rpc = options.stream
      ? createA2aRpc({ ...shared, stream: options.stream })
      : createA2aRpc({
          ...shared,
          stream: receiverStream(context.receiver, sessions),
          answer: (question, requestContext) => ask(context.receiver, sessions, question, requestContext),
        });

    async function answerRpc(request: Parameters<Face['handle']>[0]): Promise<EdgeResponse> {
      if (request.method !== 'POST') {
        const refusal = a2aFailure(405, 'POST JSON-RPC requests');
        refusal.headers.allow = 'POST';
        return refusal;
      }
      const version = header(request, 'a2a-version');
      if (version !== undefined && version !== '' && !SUPPORTED_VERSION.test(version.trim())) {
        return rpcError(
          200,
          null,
          A2A_ERRORS.VERSION_NOT_SUPPORTED,
          `A2A version ${version.slice(0, 20)} is not supported (1.0, 0.3)`,
        );
      }
      return rpc(request);
    }

    async function answerCard(request: Parameters<Face['handle']>[0]): Promise<EdgeResponse> {
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        const refusal = a2aFailure(405, 'GET the agent card');
        refusal.headers.allow = 'GET, HEAD';
        return refusal;
      }
      const card = a2aCard({
        name: context.name,
        description: context.description,
        version: options.version ?? '1.0.0',
        baseUrl: baseUrlOf(request, context.publicUrl) ?? 'http://localhost',
        protocols: await context.catalogue.entries(),
        tokens: context.tokensRequired,
        auth: await context.oauth?.describe(),
      });
      const response = json(200, card, { 'cache-control': 'public, max-age=60' });
      if (request.method === 'HEAD') response.body = '';
      return response;
    }

    return {
      name: 'a2a',
      routes: A2A_ROUTES,
      headers: ['a2a-version'],
      handle(request) {
        if (request.route?.name === 'card') return answerCard(request);
        // `/a2a/…`: not an endpoint of A2A's, answered in its shape.
        if (cleanPath(request.path) !== A2A_RPC_PATH) return a2aFailure(404, 'Not found');
        return answerRpc(request);
      },
      failure: a2aFailure,
    };
  },
};
