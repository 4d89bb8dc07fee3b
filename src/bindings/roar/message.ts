// One ROAR message in, one ROAR reply out: shape checks, signature, freshness and replay checks, the mapping
// of the payload to an Agora ask, and the signed `respond` message that carries the answer back.
import { randomUUID, type KeyObject } from 'node:crypto';
import { isAgoraError } from '../../errors.js';
import type { JsonObject, JsonValue } from '../../schemas.js';
import type { Ask } from '../../faces/ask.js';
import { sessionKey } from '../../faces/sessions.js';
import { canonicalJson, pythonFloat, pythonString, RawNumber, toPlain, type LosslessValue } from './canonical.js';
import { readRoarJson } from './read.js';
import { identityJson, type RoarIdentity } from './identity.js';
import { ROAR_CAPABILITIES } from './card.js';
import type { ReplayGuard } from './replay.js';
import { ed25519Signature, hmacSignature, signingBody, verifyEd25519, verifyHmac } from './signing.js';

/** ROAR's intents (spec 0.3). */
export const ROAR_INTENTS = [
  'execute',
  'delegate',
  'update',
  'ask',
  'respond',
  'notify',
  'discover',
  'monitor',
] as const;

/** A refusal in ROAR's error shape `{"error": code, "message": text}`; never leaves the faces. */
export class RoarRefusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfter?: number,
  ) {
    super(message);
  }

  /** The JSON body of the refusal. */
  get body(): string {
    return JSON.stringify({ error: this.code, message: this.message });
  }
}

/** How incoming messages are checked and replies signed. */
export type RoarSecurity = {
  /** HMAC secret shared with peers. */
  secret?: string;
  /** DID → Ed25519 public key of the peers trusted to sign with Ed25519. */
  trust?: ReadonlyMap<string, KeyObject>;
  replay: ReplayGuard;
  /** Clock in Unix milliseconds. */
  now: () => number;
};

/** A message that passed the shape checks. */
export type RoarMessage = {
  raw: { [key: string]: LosslessValue };
  id: string;
  fromDid: string;
  toDid: string;
  intent: (typeof ROAR_INTENTS)[number];
  payload: JsonObject;
  context: JsonObject;
};

const MAX_ID = 256;
const MAX_AGE_SECONDS = 300;
const MAX_FUTURE_SECONDS = 30;
/** How long a message id is remembered against replays. */
export const REPLAY_WINDOW_MS = 600_000;

function invalid(message: string): never {
  throw new RoarRefusal(400, 'invalid_message', message);
}

function isObject(value: LosslessValue | undefined): value is { [key: string]: LosslessValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof RawNumber);
}

/**
 * A number as either reader gives it: JSON.parse's (taken only when it prints back as sent, see readRoarJson) or
 * the lossless reader's RawNumber; canonicalJson prints both as Python would.
 */
function isNumber(value: LosslessValue | undefined): value is number | RawNumber {
  return typeof value === 'number' || value instanceof RawNumber;
}

function didOf(value: LosslessValue | undefined, field: string): string {
  const did = isObject(value) ? value.did : value;
  if (typeof did !== 'string' || !/^did:[a-z0-9]+:\S{1,500}$/.test(did)) invalid(`${field}.did must be a DID string`);
  return did;
}

/**
 * Reads and checks a ROAR message's shape (400 `invalid_message` on any fault); `exactNumbers` keeps every number as
 * sent, which a signature check needs (see readRoarJson).
 */
export function parseRoarMessage(text: string, exactNumbers = true): RoarMessage {
  let raw: LosslessValue;
  let plain: boolean;
  try {
    ({ value: raw, plain } = readRoarJson(text, exactNumbers));
  } catch (error) {
    invalid(isAgoraError(error) ? error.message : 'Invalid JSON');
  }
  if (!isObject(raw)) invalid('A ROAR message is a JSON object');
  if (raw.roar !== undefined && typeof raw.roar !== 'string') invalid('roar must be a version string');
  const { id, intent } = raw;
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID)
    invalid(`id must be a string of 1 to ${MAX_ID} characters`);
  if (typeof intent !== 'string' || !(ROAR_INTENTS as readonly string[]).includes(intent))
    invalid(`intent must be one of ${ROAR_INTENTS.join(', ')}`);
  const payload = raw.payload ?? Object.create(null);
  const context = raw.context ?? Object.create(null);
  if (!isObject(payload)) invalid('payload must be an object');
  if (!isObject(context)) invalid('context must be an object');
  if (raw.auth !== undefined && !isObject(raw.auth)) invalid('auth must be an object');
  if (raw.timestamp !== undefined && !isNumber(raw.timestamp)) invalid('timestamp must be a number');
  // The sender's identity goes back as the reply's `to`, which is not signed: as plain JSON it cannot carry a
  // number JSON has no text for (`1e400` would print as Python's `Infinity`, which JSON readers refuse).
  if (!plain && raw.from !== undefined) raw.from = toPlain(raw.from);
  return {
    raw,
    id,
    fromDid: didOf(raw.from, 'from'),
    toDid: didOf(raw.to, 'to'),
    intent: intent as RoarMessage['intent'],
    // JSON.parse gave plain JSON already; the lossless reader's numbers become numbers.
    payload: (plain ? payload : toPlain(payload)) as JsonObject,
    context: (plain ? context : toPlain(context)) as JsonObject,
  };
}

/**
 * Checks who sent a message: `to` is us, the signature (when signing is on) and its freshness; the caller then
 * asks the replay guard (kept apart so this stays synchronous). Throws a {@link RoarRefusal} (400 or 401).
 */
export function checkSender(message: RoarMessage, ourDid: string, security: Omit<RoarSecurity, 'replay'>): void {
  if (message.toDid !== ourDid) invalid(`to.did ${message.toDid} is not this agent (${ourDid})`);
  const signing = security.secret !== undefined || (security.trust !== undefined && security.trust.size > 0);
  if (signing) {
    const auth = message.raw.auth;
    const signature = isObject(auth) ? auth.signature : undefined;
    const timestamp = isObject(auth) ? auth.timestamp : undefined;
    if (typeof signature !== 'string' || !isNumber(timestamp)) {
      throw new RoarRefusal(
        401,
        'signature_invalid',
        'This agent requires signed messages: auth.signature and auth.timestamp',
      );
    }
    const body = signingBody({
      id: message.id,
      from: message.fromDid,
      to: message.toDid,
      intent: message.intent,
      payload: message.raw.payload ?? {},
      context: message.raw.context ?? {},
      timestamp,
    });
    if (signature.startsWith('hmac-sha256:')) {
      if (security.secret === undefined)
        throw new RoarRefusal(401, 'no_signing_secret', 'This agent has no HMAC secret: sign with Ed25519');
      if (!verifyHmac(body, signature, security.secret))
        throw new RoarRefusal(401, 'signature_invalid', 'HMAC signature verification failed');
    } else if (signature.startsWith('ed25519:')) {
      // Only a key the trust file gives for this DID: a key carried in the message proves nothing.
      const key = security.trust?.get(message.fromDid);
      if (key === undefined)
        throw new RoarRefusal(401, 'signature_invalid', `No trusted Ed25519 key for ${message.fromDid}`);
      if (!verifyEd25519(body, signature, key))
        throw new RoarRefusal(401, 'signature_invalid', 'Ed25519 signature verification failed');
    } else {
      throw new RoarRefusal(401, 'signature_invalid', 'Unknown signature scheme: hmac-sha256 or ed25519');
    }
    const age = security.now() / 1000 - (typeof timestamp === 'number' ? timestamp : timestamp.value);
    if (!(age <= MAX_AGE_SECONDS))
      throw new RoarRefusal(401, 'signature_invalid', `Message timestamp is older than ${MAX_AGE_SECONDS} s`);
    if (age < -MAX_FUTURE_SECONDS)
      throw new RoarRefusal(
        401,
        'signature_invalid',
        `Message timestamp is more than ${MAX_FUTURE_SECONDS} s in the future`,
      );
  }
}

/** The 409 refusal of a message whose id the replay guard has seen. */
export function duplicate(message: RoarMessage): RoarRefusal {
  return new RoarRefusal(409, 'duplicate_message', `Message ${message.id} was already received`);
}

/** What a message asks for: an Agora ask (and the session id its reply carries), the card (`discover`), or only an acknowledgement (`notify`, `respond`). */
export type RoarAction = { kind: 'ask'; ask: Ask; sessionId?: string } | { kind: 'discover' } | { kind: 'acknowledge' };

/**
 * Maps a message to an action: `payload.protocolHash` (+ `body`, `protocolSources`) is a protocol query; else
 * `task`, `text` or `message` is natural language. `context.session_id` names a conversation, kept under the
 * caller's `principal` (a verified signer, a token) and handed back as it came.
 */
export function roarAction(message: RoarMessage, principal: string | undefined): RoarAction {
  if (message.intent === 'discover') return { kind: 'discover' };
  if (message.intent === 'notify' || message.intent === 'respond') return { kind: 'acknowledge' };
  const { payload, context } = message;
  const sessionId = context.session_id;
  if (
    sessionId !== undefined &&
    (typeof sessionId !== 'string' || sessionId.length === 0 || sessionId.length > MAX_ID)
  ) {
    invalid(`context.session_id must be a string of 1 to ${MAX_ID} characters`);
  }
  const session = typeof sessionId === 'string' ? sessionKey(principal, sessionId) : undefined;
  if (payload.protocolHash !== undefined && payload.protocolHash !== null) {
    if (typeof payload.protocolHash !== 'string') invalid('payload.protocolHash must be a string');
    const sources = payload.protocolSources;
    if (
      sources !== undefined &&
      sources !== null &&
      !(Array.isArray(sources) && sources.every((source) => typeof source === 'string'))
    ) {
      invalid('payload.protocolSources must be an array of strings');
    }
    if (payload.body === undefined) invalid('payload.body is required with payload.protocolHash');
    const ask: Ask = { protocolHash: payload.protocolHash, body: payload.body };
    if (Array.isArray(sources)) ask.protocolSources = sources as string[];
    if (session !== undefined) ask.session = session;
    return session === undefined ? { kind: 'ask', ask } : { kind: 'ask', ask, sessionId: sessionId as string };
  }
  const text = payload.task ?? payload.text ?? payload.message;
  if (text === undefined || text === null || text === '')
    invalid('payload needs task, text or message (natural language), or protocolHash and body');
  const ask: Ask = { body: text };
  if (session !== undefined) ask.session = session;
  return session === undefined ? { kind: 'ask', ask } : { kind: 'ask', ask, sessionId: sessionId as string };
}

/** The canonical text of a reply's payload to an answered ask, its two keys written in sorted order. */
export function okPayloadText(result: JsonValue): string {
  return `{"result": ${canonicalJson(result)}, "status": "ok"}`;
}

/** The payload of a reply to a failed ask: the Agora error's code and its peer-safe message. */
export function errorPayload(error: unknown): JsonObject {
  if (isAgoraError(error)) return { status: 'error', error: error.code.toLowerCase(), message: error.message };
  return { status: 'error', error: 'internal', message: 'Internal error' };
}

// The identity as the reply's `from` prints it, and its DID as the signed `from`, once per identity (the
// identity is the largest part of every reply).
const identityTexts = new WeakMap<RoarIdentity, { identity: string; did: string }>();

function identityTextOf(identity: RoarIdentity): { identity: string; did: string } {
  let texts = identityTexts.get(identity);
  if (texts === undefined) {
    texts = { identity: canonicalJson(identityJson(identity, ROAR_CAPABILITIES)), did: pythonString(identity.did) };
    identityTexts.set(identity, texts);
  }
  return texts;
}

/**
 * A signed `respond` message from us to the sender (HMAC with the secret, else Ed25519 with our key when
 * signing is on), serialized so the bytes a Python verifier reads back give the canonical body we signed.
 * `payloadText` is the payload as canonical JSON; it and the context are shared by the signed body and the wire text.
 * `session` is the session id the reply hands back, the message's own by default.
 */
export function replyText(
  identity: RoarIdentity,
  message: RoarMessage,
  payloadText: string,
  security: Omit<RoarSecurity, 'replay'>,
  session?: string,
): string {
  const timestamp = pythonFloat(security.now() / 1000);
  const uuid = randomUUID();
  const id = `"msg_${uuid.slice(0, 8)}${uuid.slice(9, 11)}"`;
  const sessionId = session ?? message.context.session_id;
  const context = `{"in_reply_to": ${pythonString(message.id)}${typeof sessionId === 'string' ? `, "session_id": ${pythonString(sessionId)}` : ''}}`;
  const texts = identityTextOf(identity);
  const toDid = pythonString(message.fromDid);
  // signingBody's bytes: the seven keys in sorted order.
  const body = `{"context": ${context}, "from": ${texts.did}, "id": ${id}, "intent": "respond", "payload": ${payloadText}, "timestamp": ${timestamp}, "to": ${toDid}}`;
  let auth = '{}';
  if (security.secret !== undefined)
    auth = `{"signature": "${hmacSignature(body, security.secret)}", "timestamp": ${timestamp}}`;
  else if (security.trust !== undefined && security.trust.size > 0)
    auth = `{"signature": "${ed25519Signature(body, identity.privateKey)}", "timestamp": ${timestamp}}`;
  const to = message.raw.from;
  const toText = typeof to === 'object' && to !== null ? canonicalJson(to) : `{"did": ${toDid}}`;
  return `{"auth": ${auth}, "context": ${context}, "from": ${texts.identity}, "id": ${id}, "intent": "respond", "payload": ${payloadText}, "roar": "1.0", "timestamp": ${timestamp}, "to": ${toText}}`;
}
