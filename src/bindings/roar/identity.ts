// The agent's ROAR identity: a DID and an Ed25519 key pair made once and kept in the agent's memory, so every
// process and every restart (and every process sharing a Redis memory) presents the same identity.
import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { slug } from '../../_slug.js';
import type { AgentMemory } from '../../memory/file.js';
import { keyPairFromSeed, rawKeyHex } from './signing.js';

/** The agent's ROAR identity. */
export type RoarIdentity = {
  /** `did:roar:agent:<slug>-<16 hex>`. */
  did: string;
  displayName: string;
  /** Raw Ed25519 public key, hex (ROAR's `public_key`). */
  publicKeyHex: string;
  publicKey: KeyObject;
  privateKey: KeyObject;
};

/** The memory key the identity lives under. */
export const IDENTITY_KEY = 'faces/roar-identity';

const DID = /^did:roar:agent:[a-z0-9-]+-[0-9a-f]{16}$/;

type Stored = { did: string; publicKey: string; privateKey: string; createdAt: string };

function isStored(value: unknown): value is Stored {
  const stored = value as Partial<Stored> | undefined;
  return (
    typeof stored === 'object' &&
    stored !== null &&
    typeof stored.did === 'string' &&
    DID.test(stored.did) &&
    typeof stored.publicKey === 'string' &&
    /^[0-9a-f]{64}$/.test(stored.publicKey) &&
    typeof stored.privateKey === 'string' &&
    /^[0-9a-f]{64}$/.test(stored.privateKey)
  );
}

/**
 * Reads the agent's ROAR identity from its memory, making and storing it the first time.
 * Two processes starting at once on a fresh memory may both make one; the one written last is read back by both.
 */
export async function loadIdentity(memory: AgentMemory, displayName: string): Promise<RoarIdentity> {
  let stored: unknown = await memory.get(IDENTITY_KEY);
  if (!isStored(stored)) {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const made: Stored = {
      did: `did:roar:agent:${slug(displayName, { maxLength: 40, fallback: 'agent' })}-${randomBytes(8).toString('hex')}`,
      publicKey: rawKeyHex(publicKey),
      privateKey: rawKeyHex(privateKey),
      createdAt: new Date().toISOString(),
    };
    await memory.set(IDENTITY_KEY, made);
    stored = await memory.get(IDENTITY_KEY);
    if (!isStored(stored)) stored = made;
  }
  const kept = stored as Stored;
  const keys = keyPairFromSeed(kept.privateKey, kept.publicKey);
  return { did: kept.did, displayName, publicKeyHex: kept.publicKey, ...keys };
}

/** The identity as ROAR's `AgentIdentity` JSON. */
export function identityJson(
  identity: RoarIdentity,
  capabilities: readonly string[],
): Record<string, string | string[] | null> {
  return {
    did: identity.did,
    display_name: identity.displayName,
    agent_type: 'agent',
    capabilities: [...capabilities],
    version: '1.0',
    public_key: identity.publicKeyHex,
  };
}
