// Every default of a Sender in one place: the options a caller gives merge over these (durations in ms).
import { DEFAULT_MAX_ROUNDS } from '../negotiation.js';
import { CLIENT_DEFAULTS } from '../net/client.js';

/** When a typed task looks for a protocol and when it negotiates one (uses per task and target, 1-based). */
export type SenderThresholds = {
  /** From this use on, look for a fitting PD (default 6, as the Python SDK). */
  lookForProtocolFrom?: number;
  /** From this use on, with no fitting PD, negotiate one (default 11). */
  negotiateFrom?: number;
};

/** The defaults of {@link Sender} options: bounds of the wire, of the hub, of negotiation, and task thresholds. */
export const SENDER_DEFAULTS = {
  /** Bound on each HTTP exchange with a peer (and, for a stream, between two of its pieces). */
  timeoutMs: CLIENT_DEFAULTS.timeoutMs,
  /** Largest reply read from a peer, in bytes, after decompression. */
  maxReplyBytes: CLIENT_DEFAULTS.maxReplyBytes,
  /** Bound on each exchange with the hub: short, as negotiation is the fallback. */
  hubTimeoutMs: 2_000,
  /** Largest reply read from the hub (a search answer), in bytes. */
  hubMaxReplyBytes: 1024 * 1024,
  /** Messages sent to the peer in a negotiation before giving up. */
  maxNegotiationRounds: DEFAULT_MAX_ROUNDS,
  /** From which use a typed task looks for a PD, and from which it negotiates one. */
  thresholds: { lookForProtocolFrom: 6, negotiateFrom: 11 } satisfies Required<SenderThresholds>,
} as const;
