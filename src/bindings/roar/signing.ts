// ROAR message signatures: HMAC-SHA256 with a shared secret, Ed25519 with a key the receiver already trusts,
// both over the canonical JSON of the seven signed fields (spec 0.3, `spec/04-exchange.md`).
import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  createSecretKey,
  sign,
  timingSafeEqual,
  verify,
  type KeyObject,
} from 'node:crypto';
import { canonicalJson, type LosslessValue } from './canonical.js';

/** The seven fields a ROAR signature covers; `from` and `to` are DIDs, `timestamp` is `auth.timestamp`. */
export type SigningFields = {
  id: LosslessValue;
  from: LosslessValue;
  to: LosslessValue;
  intent: LosslessValue;
  payload: LosslessValue;
  context: LosslessValue;
  timestamp: LosslessValue;
};

/** The bytes a ROAR signature covers, as Python's `json.dumps(…, sort_keys=True, separators=(", ", ": "))` prints them. */
export function signingBody(fields: SigningFields): string {
  // The seven keys in sorted order, written out: the same bytes as canonicalJson of the object, without sorting them.
  return `{"context": ${canonicalJson(fields.context)}, "from": ${canonicalJson(fields.from)}, "id": ${canonicalJson(fields.id)}, "intent": ${canonicalJson(fields.intent)}, "payload": ${canonicalJson(fields.payload)}, "timestamp": ${canonicalJson(fields.timestamp)}, "to": ${canonicalJson(fields.to)}}`;
}

// The secret as a key object, made once: createHmac with a string prepares a new key on every call.
let lastSecret: string | undefined;
let lastKey: KeyObject | undefined;

function secretKey(secret: string): KeyObject {
  if (secret !== lastSecret || lastKey === undefined) {
    lastKey = createSecretKey(Buffer.from(secret, 'utf8'));
    lastSecret = secret;
  }
  return lastKey;
}

/** `hmac-sha256:<hex>` over the canonical body. */
export function hmacSignature(body: string, secret: string): string {
  return `hmac-sha256:${createHmac('sha256', secretKey(secret)).update(body, 'utf8').digest('hex')}`;
}

/** `ed25519:<base64url, no padding>` over the canonical body. */
export function ed25519Signature(body: string, privateKey: KeyObject): string {
  return `ed25519:${sign(null, Buffer.from(body, 'utf8'), privateKey).toString('base64url')}`;
}

// What hmacSignature prints: the prefix and 64 lower-case hex digits; anything else can never match.
const HMAC_SIGNATURE = /^hmac-sha256:[0-9a-f]{64}$/;

/**
 * Whether an `hmac-sha256:` signature is right, compared in constant time. Both texts are then ASCII of one
 * length, so latin1 gives their bytes without UTF-8 encoding. (The hex digest is compared as text: a raw digest
 * Buffer costs more to make than the hex string.)
 */
export function verifyHmac(body: string, signature: string, secret: string): boolean {
  if (!HMAC_SIGNATURE.test(signature)) return false;
  return timingSafeEqual(Buffer.from(hmacSignature(body, secret), 'latin1'), Buffer.from(signature, 'latin1'));
}

/** Whether an `ed25519:` signature is right under this public key. */
export function verifyEd25519(body: string, signature: string, publicKey: KeyObject): boolean {
  if (!signature.startsWith('ed25519:')) return false;
  const encoded = signature.slice('ed25519:'.length);
  if (!/^[A-Za-z0-9_-]{86}$/.test(encoded)) return false;
  try {
    return verify(null, Buffer.from(body, 'utf8'), publicKey, Buffer.from(encoded, 'base64url'));
  } catch {
    return false;
  }
}

/** An Ed25519 public key from its 32 raw bytes in hex (the form of ROAR's `public_key` and of the trust file). */
export function publicKeyFromHex(hex: string): KeyObject {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new Error('An Ed25519 public key is 64 hex characters');
  return createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(hex, 'hex').toString('base64url') },
    format: 'jwk',
  });
}

/** An Ed25519 private key from its 32-byte seed in hex, with the public key in hex. */
export function keyPairFromSeed(seedHex: string, publicHex: string): { privateKey: KeyObject; publicKey: KeyObject } {
  const privateKey = createPrivateKey({
    key: {
      kty: 'OKP',
      crv: 'Ed25519',
      d: Buffer.from(seedHex, 'hex').toString('base64url'),
      x: Buffer.from(publicHex, 'hex').toString('base64url'),
    },
    format: 'jwk',
  });
  return { privateKey, publicKey: publicKeyFromHex(publicHex) };
}

/** The raw 32 bytes of an Ed25519 key (public, or the seed of a private one) in hex. */
export function rawKeyHex(key: KeyObject): string {
  const jwk = key.export({ format: 'jwk' });
  const raw = key.type === 'private' ? jwk.d : jwk.x;
  if (typeof raw !== 'string') throw new Error('Not an Ed25519 key');
  return Buffer.from(raw, 'base64url').toString('hex');
}
