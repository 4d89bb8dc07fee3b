// A receiver's configuration from one source: its defaults, every one written once, and the options merged over them.
import { DEFAULT_MAX_LLM_CHARS } from '../llm/budget.js';
import { DEFAULT_MAX_DOCUMENT_BYTES } from '../protocol/sources.js';
import type { ReceiverOptions } from './types.js';
import { DEFAULT_CONVERSATION_TTL_MS, withDefaults } from '../_defaults.js';

export { DEFAULT_CONVERSATION_TTL_MS } from '../_defaults.js';

/**
 * The defaults of {@link ReceiverOptions}, durations in ms. `tombstoneTtlMs` defaults to `conversationTtlMs`, and
 * `rescanIntervalMs` applies while watching (none with `watch: false`); the learned documents' bounds and the tool
 * loop's steps are those of the registry and the loop when not given.
 */
export const RECEIVER_DEFAULTS = {
  dir: '.',
  conversationTtlMs: DEFAULT_CONVERSATION_TTL_MS,
  routineTimeoutMs: 10_000,
  isolateRoutines: false,
  allowPrivateSources: false,
  maxDocumentBytes: DEFAULT_MAX_DOCUMENT_BYTES,
  maxHistory: 40,
  maxLlmChars: DEFAULT_MAX_LLM_CHARS,
  watch: true,
  rescanIntervalMs: 300_000,
  waitForProtocols: true,
} as const;

type Defaulted = {
  -readonly [K in keyof typeof RECEIVER_DEFAULTS]: (typeof RECEIVER_DEFAULTS)[K] extends string
    ? string
    : (typeof RECEIVER_DEFAULTS)[K] extends number
      ? number
      : boolean;
};

/** The options of a receiver with every default filled in, and the durations that derive from others. */
export type ReceiverSettings = Omit<ReceiverOptions, keyof Defaulted | 'tombstoneTtlMs'> &
  Defaulted & { tombstoneTtlMs: number };

/** The options merged over {@link RECEIVER_DEFAULTS} (an option given as `undefined` takes the default). */
export function receiverSettings(options: ReceiverOptions): ReceiverSettings {
  const settings = withDefaults(RECEIVER_DEFAULTS, options) as unknown as ReceiverSettings;
  if (options.rescanIntervalMs === undefined && !settings.watch) settings.rescanIntervalMs = 0;
  settings.tombstoneTtlMs = tombstoneMsOf(settings);
  return settings;
}

/** How long a tombstone is kept, ms: `tombstoneTtlMs`, by default (and at least) one conversation TTL (spec §2). */
export function tombstoneMsOf(options: Pick<ReceiverOptions, 'conversationTtlMs' | 'tombstoneTtlMs'>): number {
  const ttl = options.conversationTtlMs ?? DEFAULT_CONVERSATION_TTL_MS;
  return Math.max(ttl, options.tombstoneTtlMs ?? ttl);
}
