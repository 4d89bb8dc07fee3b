// ROAR messages built and signed as ROAR's Python SDK builds them, and replies verified as it verifies them.
import type { KeyObject } from 'node:crypto';
import { canonicalJson, parseLossless, pythonFloat, RawNumber, type LosslessValue } from '../../../src/faces/roar/canonical.js';
import { ed25519Signature, hmacSignature, signingBody } from '../../../src/faces/roar/signing.js';

/** The sender every test message comes from. */
export const SENDER = 'did:roar:agent:sender-0123456789abcdef';

/** What a test message may set; `now` is the clock (ms) its timestamps come from. */
export type MessageOptions = { now: number; id?: string; secret?: string; key?: KeyObject; timestamp?: number; context?: LosslessValue; from?: string };

/** A message as ROAR's Python SDK sends it: canonical JSON of the seven fields signed, auth.timestamp a float. */
export function pythonMessage(to: string, payload: LosslessValue, options: MessageOptions): string {
  const timestamp = new RawNumber(pythonFloat((options.timestamp ?? options.now) / 1000));
  const id = options.id ?? `msg_${Math.random().toString(16).slice(2, 12)}`;
  const from = options.from ?? SENDER;
  const context = options.context ?? {};
  const body = signingBody({ id, from, to, intent: 'delegate', payload, context, timestamp });
  const auth: Record<string, LosslessValue> = options.secret ? { signature: hmacSignature(body, options.secret), timestamp } : options.key ? { signature: ed25519Signature(body, options.key), timestamp } : {};
  return canonicalJson({ roar: '1.0', id, from: { did: from, display_name: 'sender', agent_type: 'agent', capabilities: [], version: '1.0', public_key: null }, to: { did: to, display_name: 'x', agent_type: 'agent', capabilities: [], version: '1.0', public_key: null }, intent: 'delegate', payload, context, auth, timestamp });
}

/** Verifies a reply the way a Python ROAR client would: its canonical body from the bytes it read. */
export function replyVerifies(text: string, check: (body: string, signature: string) => boolean): boolean {
  const reply = parseLossless(text) as Record<string, LosslessValue> & { from: { did: string }; to: { did: string }; auth: { signature: string; timestamp: LosslessValue } };
  const body = signingBody({ id: reply.id!, from: reply.from.did, to: reply.to.did, intent: reply.intent!, payload: reply.payload!, context: reply.context!, timestamp: reply.auth.timestamp });
  return check(body, reply.auth.signature);
}
