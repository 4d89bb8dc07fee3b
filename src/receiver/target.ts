import { normalizeHash } from '../protocol/document.js';

/** What a query or follow-up asks for, resolved once at the receiver's edge from its `protocolHash`. */
export type QueryTarget =
  | { kind: 'natural' }
  | { kind: 'negotiation' }
  /** `hash` is normalized hex; `raw` is what the peer sent (hex or base64). */
  | { kind: 'protocol'; hash: string; raw: string }
  /** A `protocolHash` that is no hash at all: it can name no document. */
  | { kind: 'malformed'; raw: string };

const NATURAL: QueryTarget = { kind: 'natural' };
const NEGOTIATION: QueryTarget = { kind: 'negotiation' };
/** The reserved `protocolHash` of a negotiation conversation (and its value in a stored record). */
const NEGOTIATION_HASH = 'negotiation';

/**
 * Resolves a wire `protocolHash` (null or absent: natural language). Most queries in a row name the same protocol:
 * the last one's target is kept, per receiver (targets are never mutated; a hash is at most 44 characters, so a
 * peer's long junk is never held).
 */
export class QueryTargets {
  #lastRaw: string | undefined;
  #lastTarget: QueryTarget = NATURAL;

  /** The target a query's `protocolHash` names. */
  of(protocolHash: string | null | undefined): QueryTarget {
    if (protocolHash === undefined || protocolHash === null) return NATURAL;
    if (protocolHash === NEGOTIATION_HASH) return NEGOTIATION;
    if (protocolHash === this.#lastRaw) return this.#lastTarget;
    const target = targetOf(protocolHash);
    if (protocolHash.length <= 64) {
      this.#lastRaw = protocolHash;
      this.#lastTarget = target;
    }
    return target;
  }
}

/** Resolves a wire `protocolHash` (null or absent: natural language), with no memory of the last one. */
export function targetOf(protocolHash: string | null | undefined): QueryTarget {
  if (protocolHash === undefined || protocolHash === null) return NATURAL;
  if (protocolHash === NEGOTIATION_HASH) return NEGOTIATION;
  const hash = normalizeHash(protocolHash);
  return hash === undefined ? { kind: 'malformed', raw: protocolHash } : { kind: 'protocol', hash, raw: protocolHash };
}

/** The target a stored conversation record names (records keep hex, null or `"negotiation"`). */
export function targetOfRecord(protocolHash: string | null): QueryTarget {
  if (protocolHash === null) return NATURAL;
  if (protocolHash === NEGOTIATION_HASH) return NEGOTIATION;
  return { kind: 'protocol', hash: protocolHash, raw: protocolHash };
}

/** How a record stores a target. */
export function recordHashOf(target: QueryTarget): string | null {
  switch (target.kind) {
    case 'natural':
      return null;
    case 'negotiation':
      return NEGOTIATION_HASH;
    case 'protocol':
      return target.hash;
    case 'malformed':
      return target.raw;
  }
}
