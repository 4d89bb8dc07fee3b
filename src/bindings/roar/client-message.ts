// ROAR messages as a client writes and reads them: a message signed with HMAC or Ed25519 over ROAR's canonical JSON
// (the wire text is that same canonical JSON, so the bytes signed are the bytes a Python verifier re-prints), and a
// reply checked before it is believed: its shape, that it answers our message, its signature and its freshness.
import { randomBytes, type KeyObject } from 'node:crypto';
import { AgoraError } from '../../errors.js';
import type { JsonObject, JsonValue } from '../../schemas.js';
import { canonicalJson, parseLossless, pythonFloat, RawNumber, toPlain, type LosslessValue } from './canonical.js';
import { ed25519Signature, hmacSignature, signingBody, verifyEd25519, verifyHmac } from './signing.js';

/** Who we are to a ROAR agent: a DID, and an Ed25519 private key to sign with (optional). */
export type RoarSelf = { did: string; displayName?: string; publicKeyHex?: string; privateKey?: KeyObject };

/** How messages are signed and replies verified. */
export type RoarSigning = {
  /** HMAC secret shared with the agent: messages are signed `hmac-sha256`, replies must be too. */
  secret?: string;
  /** DID → Ed25519 public key of agents trusted to sign replies; a reply from one of them must carry a good signature. */
  trust?: ReadonlyMap<string, KeyObject>;
  /** Clock in Unix milliseconds (default Date.now). */
  now?: () => number;
};

/** A reply that passed the checks. */
export type RoarReply = {
  id: string;
  fromDid: string;
  payload: JsonObject;
  context: JsonObject;
  /** How the reply was verified: by the shared secret, a trusted key, or not at all (no signing configured). */
  verified: 'hmac' | 'ed25519' | 'none';
};

/** The ROAR intents a message may carry. */
export type RoarIntent = 'execute' | 'delegate' | 'update' | 'ask' | 'respond' | 'notify' | 'discover';

// A reply older than this, or this far in the future, is refused (ROAR's own window).
const MAX_AGE_SECONDS = 300;
const MAX_FUTURE_SECONDS = 30;

/** A fresh message id in ROAR's form (`msg_` and 10 hex digits). */
export function roarMessageId(): string {
  return `msg_${randomBytes(5).toString('hex')}`;
}

/** Our identity as ROAR's AgentIdentity JSON. */
export function selfIdentity(self: RoarSelf): JsonObject {
  return {
    did: self.did,
    display_name: self.displayName ?? '',
    agent_type: 'agent',
    capabilities: [],
    version: '1.0',
    public_key: self.publicKeyHex ?? null,
  };
}

/** What {@link writeRoarMessage} writes. */
export type OutgoingRoar = {
  id?: string;
  self: RoarSelf;
  to: JsonObject;
  intent: RoarIntent;
  payload: JsonObject;
  context?: JsonObject;
};

/**
 * A ROAR message as canonical JSON text, signed with the secret (HMAC) or else with our Ed25519 key when we have
 * one; unsigned otherwise. Returns the text and the message id.
 */
export function writeRoarMessage(message: OutgoingRoar, signing: RoarSigning): { id: string; text: string } {
  const id = message.id ?? roarMessageId();
  const timestamp = new RawNumber(pythonFloat((signing.now ?? Date.now)() / 1000));
  const toDid = typeof message.to.did === 'string' ? message.to.did : '';
  const context = message.context ?? {};
  const body = signingBody({
    id,
    from: message.self.did,
    to: toDid,
    intent: message.intent,
    payload: message.payload,
    context,
    timestamp,
  });
  let auth: { [key: string]: LosslessValue } = {};
  if (signing.secret !== undefined) auth = { signature: hmacSignature(body, signing.secret), timestamp };
  else if (message.self.privateKey !== undefined)
    auth = { signature: ed25519Signature(body, message.self.privateKey), timestamp };
  const text = canonicalJson({
    roar: '1.0',
    id,
    from: selfIdentity(message.self),
    to: message.to,
    intent: message.intent,
    payload: message.payload,
    context,
    auth,
    timestamp,
  });
  return { id, text };
}

function isObject(value: LosslessValue | undefined): value is { [key: string]: LosslessValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof RawNumber);
}

function numberOf(value: LosslessValue | undefined): number | undefined {
  if (value instanceof RawNumber) return value.value;
  return typeof value === 'number' ? value : undefined;
}

/**
 * Reads and checks a reply to our message `sentId`: a `respond` message to our DID, answering our id when it says
 * which, signed (HMAC with the secret; Ed25519 by a trusted key) whenever signing is configured, and fresh.
 * Any fault is AgoraError('PEER_FAILURE') naming `what`.
 */
export function readRoarReply(
  value: LosslessValue,
  sentId: string,
  self: RoarSelf,
  signing: RoarSigning,
  what: string,
): RoarReply {
  const refuse = (why: string): never => {
    throw new AgoraError('PEER_FAILURE', `${what}: ${why}`);
  };
  if (!isObject(value)) return refuse('the reply is not a ROAR message');
  const { id, intent } = value;
  const from = isObject(value.from) ? value.from.did : undefined;
  const to = isObject(value.to) ? value.to.did : undefined;
  if (typeof id !== 'string' || typeof from !== 'string' || typeof intent !== 'string')
    return refuse('the reply is not a ROAR message (id, from.did, intent)');
  const payload = value.payload ?? Object.create(null);
  const context = value.context ?? Object.create(null);
  if (!isObject(payload) || !isObject(context)) return refuse("the reply's payload and context must be objects");
  if (intent !== 'respond') return refuse(`the reply's intent is ${JSON.stringify(intent.slice(0, 40))}, not respond`);
  if (to !== undefined && to !== self.did) return refuse('the reply is addressed to another agent');
  const inReplyTo = context.in_reply_to;
  if (inReplyTo !== undefined && inReplyTo !== sentId) return refuse('the reply answers another message');
  let verified: RoarReply['verified'] = 'none';
  const trusted = signing.trust?.get(from);
  if (signing.secret !== undefined || trusted !== undefined) {
    const auth = isObject(value.auth) ? value.auth : undefined;
    const signature = auth?.signature;
    const timestamp = auth?.timestamp;
    const seconds = numberOf(timestamp);
    if (typeof signature !== 'string' || seconds === undefined || timestamp === undefined)
      return refuse('the reply is not signed (an agent sharing our secret must sign its replies with it)');
    const body = signingBody({ id, from, to: to ?? '', intent, payload, context, timestamp });
    if (signature.startsWith('hmac-sha256:') && signing.secret !== undefined) {
      if (!verifyHmac(body, signature, signing.secret)) return refuse("the reply's HMAC signature does not verify");
      verified = 'hmac';
    } else if (signature.startsWith('ed25519:') && trusted !== undefined) {
      if (!verifyEd25519(body, signature, trusted)) return refuse("the reply's Ed25519 signature does not verify");
      verified = 'ed25519';
    } else return refuse('the reply is signed with a scheme we hold no key for');
    const age = (signing.now ?? Date.now)() / 1000 - seconds;
    if (!(age <= MAX_AGE_SECONDS) || age < -MAX_FUTURE_SECONDS)
      return refuse("the reply's timestamp is outside the accepted window");
  }
  return {
    id,
    fromDid: from,
    payload: toPlain(payload) as JsonObject,
    context: toPlain(context) as JsonObject,
    verified,
  };
}

/** Reads a reply's text losslessly (numbers keep their form, so the signature can be checked). */
export function parseRoarText(text: string, what: string): LosslessValue {
  try {
    return parseLossless(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    throw new AgoraError('PEER_FAILURE', `${what}: the reply is not JSON`);
  }
}

/**
 * The answer a reply carries: `payload.result` (our agents' and ROAR's usual `{status, result}`), else the whole
 * payload; a payload whose status is `error` is a PEER_FAILURE with its code (the peer's text is not repeated).
 */
export function roarResult(reply: RoarReply, what: string): JsonValue {
  const { payload } = reply;
  if (payload.status === 'error' || (typeof payload.error === 'string' && !('result' in payload))) {
    const code = typeof payload.error === 'string' && /^[\w.-]{1,60}$/.test(payload.error) ? `: ${payload.error}` : '';
    throw new AgoraError('PEER_FAILURE', `${what}: the agent answered an error${code}`);
  }
  return 'result' in payload ? (payload.result ?? null) : payload;
}
