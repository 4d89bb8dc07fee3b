// The guard's side of OAuth: who a request's bearer token names (a static token, else an access token) and whether
// its scopes cover the request's kind; and the mount of the Protected Resource Metadata.
import { createHash } from 'node:crypto';
import { AgoraError } from '../errors.js';
import { bearerToken, type TokenCheck } from './guard.js';
import {
  RESOURCE_METADATA_PATH,
  type AccessKind,
  type AuthDescription,
  type BearerVerifier,
  type Verified,
} from './oauth.js';
import type { EdgeRequest } from './request.js';
import { failure, type EdgeResponse } from './response.js';

// A request's access token is verified once, whichever of the guard's steps asks first (the rate limit, the check).
const VERIFIED = new WeakMap<EdgeRequest, Promise<Verified>>();

/** The caller a request's access token names, verified once per request (a rejection: `UNAUTHORIZED`, or 503's). */
export function verifiedCaller(verifier: BearerVerifier, request: EdgeRequest, token: string): Promise<Verified> {
  let found = VERIFIED.get(request);
  if (found === undefined) {
    found = verifier.verify(token);
    found.catch(() => undefined);
    VERIFIED.set(request, found);
  }
  return found;
}

/**
 * Who a request is, for the rate limit: a static token's digest (`token:…`), else the principal of a valid access
 * token; undefined when it carries neither (it is then counted by its address).
 */
export async function principalOf(
  verifier: BearerVerifier | undefined,
  tokens: Pick<TokenCheck, 'enabled' | 'acceptsToken'>,
  request: EdgeRequest,
): Promise<string | undefined> {
  const token = bearerToken(request.headers.authorization);
  if (token === undefined) return undefined;
  if (tokens.enabled && tokens.acceptsToken(token))
    return `token:${createHash('sha256').update(token).digest('base64url')}`;
  if (verifier === undefined) return undefined;
  return verifiedCaller(verifier, request, token).then(
    (caller) => caller.principal,
    () => undefined,
  );
}

/** A refusal of the guard with OAuth on: its status, message and headers (the challenge). */
export type BearerRefusal = { status: 401 | 403 | 503; message: string; headers: Record<string, string> };

/**
 * The guard's token check with OAuth on: a static token, else an access token, checked even on a public route (whose
 * answer may depend on who asks: a dashboard's data); a route that is not public needs one, with the scopes of its
 * kind (GET and HEAD read; other methods the route's `access`, default `query`). Sets the request's principal.
 */
export async function admitBearer(
  verifier: BearerVerifier,
  tokens: Pick<TokenCheck, 'enabled' | 'acceptsToken'>,
  request: EdgeRequest,
  route: { access?: 'query' | 'admin' },
  open: boolean,
): Promise<BearerRefusal | undefined> {
  const token = bearerToken(request.headers.authorization);
  if (token !== undefined && tokens.enabled && tokens.acceptsToken(token)) return undefined;
  if (token === undefined)
    return open
      ? undefined
      : { status: 401, message: 'Unauthorized', headers: { 'www-authenticate': verifier.challenge() } };
  let caller: Verified;
  try {
    caller = await verifiedCaller(verifier, request, token);
  } catch (error) {
    if (open) return undefined;
    if (error instanceof AgoraError && error.code === 'UNAUTHORIZED')
      return {
        status: 401,
        message: 'Unauthorized',
        headers: { 'www-authenticate': verifier.challenge('invalid_token') },
      };
    return { status: 503, message: 'Authorization server unavailable', headers: { 'retry-after': '30' } };
  }
  request.principal = caller.principal;
  request.grants = caller.grants;
  const kind: AccessKind = request.method === 'GET' || request.method === 'HEAD' ? 'read' : (route.access ?? 'query');
  if (open || caller.grants.has(kind)) return undefined;
  const challenge = verifier.challenge('insufficient_scope', kind);
  return { status: 403, message: 'Insufficient scope', headers: { 'www-authenticate': challenge } };
}

/**
 * A 401 a mount answers itself on a public route (a dashboard's data, which applies its own rule) with the challenge
 * every refusal of the guard carries: RFC 9728's `resource_metadata`, and `invalid_token` when a token was sent.
 */
export function withChallenge(
  verifier: BearerVerifier,
  request: EdgeRequest,
  answer: Promise<EdgeResponse> | EdgeResponse,
): Promise<EdgeResponse> | EdgeResponse {
  const add = (response: EdgeResponse) => {
    if (response.status !== 401) return response;
    const sent = bearerToken(request.headers.authorization) !== undefined;
    response.headers['www-authenticate'] = verifier.challenge(sent ? 'invalid_token' : undefined);
    return response;
  };
  return answer instanceof Promise ? answer.then(add) : add(answer);
}

/** The mount of the Protected Resource Metadata (RFC 9728), at its well-known path and under it. */
export function metadataMount(
  verifier: BearerVerifier,
  shape: (status: number, message: string) => EdgeResponse = failure,
) {
  return {
    name: 'oauth',
    routes: [{ path: RESOURCE_METADATA_PATH, prefix: true, public: true, allow: 'GET, HEAD, OPTIONS' }],
    handle: (request: EdgeRequest): EdgeResponse =>
      request.method === 'GET' || request.method === 'HEAD' ? verifier.metadata() : shape(405, 'Method not allowed'),
    failure: shape,
  };
}

/**
 * What a card (ROAR's, OAP's) says of the token an agent needs: a bearer token, and with OAuth where to find out how
 * to get one (RFC 9728's metadata, the authorization server).
 */
export function cardAuth(auth: AuthDescription | undefined): Record<string, unknown> {
  return {
    required: true,
    scheme: 'bearer',
    ...(auth ? { resource_metadata: auth.resourceMetadata, authorization_servers: [auth.issuer] } : {}),
  };
}
