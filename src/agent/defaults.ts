// The defaults of an agent, written once: `startAgent` merges its options over them, and `agora serve` shows them in
// its help and parses its flags against them (in seconds where the flag is). Durations are in ms.
import { DEFAULT_MAX_BODY_BYTES } from '../edge/mount.js';
import { RECEIVER_DEFAULTS } from '../receiver/defaults.js';

/** Every default of {@link startAgent} and `agora serve`; durations in ms, sizes in bytes. */
export const AGENT_DEFAULTS = {
  /** The port listened on. */
  port: 3000,
  /** Where conversations and what the agent learns live: `memory` (in the process, files under `.agora/`). */
  store: 'memory',
  /** The LLM: none (routines only); `'auto'` picks it from the environment as `agora serve` does. */
  llm: null,
  /** Idle time before a conversation expires (the receiver's default). */
  conversationTtlMs: RECEIVER_DEFAULTS.conversationTtlMs,
  /** Time a routine may run (the receiver's default). */
  routineTimeoutMs: RECEIVER_DEFAULTS.routineTimeoutMs,
  /** Time between safety rescans of `protocols/`, `routines/` and `tools/` (the receiver's default while watching). */
  rescanIntervalMs: RECEIVER_DEFAULTS.rescanIntervalMs,
  /** Largest request body, counted after decompression. */
  maxBodyBytes: DEFAULT_MAX_BODY_BYTES,
  /** Largest protocol document accepted from a peer's sources. */
  maxDocumentBytes: RECEIVER_DEFAULTS.maxDocumentBytes,
  /** LLM-served conversations under a protocol before the LLM writes a routine for it (0: never). */
  routineThreshold: 5,
  /** Use routines the LLM writes as soon as they pass their checks, without review. */
  autoApprove: false,
  /** Type-check hand-written routines and tools as they load, in the background, warning of each error. */
  typeCheck: true,
  /** Processes serving the one port (`agora serve --workers`). */
  workers: 1,
} as const;

export { withDefaults } from '../_defaults.js';
