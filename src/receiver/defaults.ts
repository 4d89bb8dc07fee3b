// A receiver's configuration from one source: its defaults, every one written once, and the options merged over them.
import { DEFAULT_MAX_LLM_CHARS } from '../llm/budget.js';
import { DEFAULT_MAX_DOCUMENT_BYTES } from '../protocol/sources.js';
import type { ReceiverOptions } from './types.js';

/** How long an idle conversation lives, ms: five minutes (and the least a tombstone is kept, spec §2). */
export const DEFAULT_CONVERSATION_TTL_MS = 300_000;

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
  const merged: Record<string, unknown> = { ...RECEIVER_DEFAULTS };
  for (const [key, value] of Object.entries(options)) if (value !== undefined) merged[key] = value;
  const settings = merged as ReceiverSettings;
  if (options.rescanIntervalMs === undefined && !settings.watch) settings.rescanIntervalMs = 0;
  settings.tombstoneTtlMs = tombstoneMsOf(settings);
  return settings;
}

/** How long a tombstone is kept, ms: `tombstoneTtlMs`, by default (and at least) one conversation TTL (spec §2). */
export function tombstoneMsOf(options: Pick<ReceiverOptions, 'conversationTtlMs' | 'tombstoneTtlMs'>): number {
  const ttl = options.conversationTtlMs ?? DEFAULT_CONVERSATION_TTL_MS;
  return Math.max(ttl, options.tombstoneTtlMs ?? ttl);
}
