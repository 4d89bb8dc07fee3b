// A hub's configuration, once: every default of `Hub` and `startHub` (durations in ms, sizes in bytes), and the
// check that turns a limit no hub can work with into one clear error instead of a silent default.
import { AgoraError } from '../errors.js';

/**
 * Every default of a hub: the options of `Hub` and `startHub` merge over these. The CLI restates none of them; it
 * passes what it was given and converts its seconds and hours to ms.
 */
export const HUB_DEFAULTS = {
  /** Agents (and room participants) on loopback and private networks are refused: the SSRF rule of sources. */
  allowPrivateAgents: false,
  /** Agents held at most. */
  maxAgents: 10_000,
  /** Time between two checks of an agent. */
  checkIntervalMs: 60_000,
  /** Consecutive failed checks before an agent is marked down. */
  maxMissedChecks: 3,
  /** An agent down and unseen this long is removed: 7 days. */
  removeDownAfterMs: 7 * 24 * 60 * 60 * 1000,
  /** Protocol documents held at most. */
  maxDocuments: 10_000,
  /** Largest protocol document: 64 KiB. */
  maxDocumentBytes: 64 * 1024,
  /** New protocol documents one client may add, per hub process. */
  maxDocumentsPerClient: 500,
  /** Chains kept at most. */
  maxRuns: 10_000,
  /** Largest chain checkpoint: 256 KiB. */
  maxRunBytes: 256 * 1024,
  /** All chain checkpoints together: 64 MiB. */
  maxRunsBytes: 64 * 1024 * 1024,
  /** The lease a checkpoint takes on its chain when the writer names none. */
  runLeaseMs: 60_000,
  /** Usage reports (`POST /usage`) kept per series, in memory. */
  maxUsageReports: 1000,
  /** Time between two pulls of each peer hub's catalogue: 5 min. */
  syncIntervalMs: 5 * 60_000,
  /** How often `startHub` runs background work (agent checks, peer syncs); 0: never. */
  tickMs: 5000,
  /** Where `startHub` listens. */
  port: 4000,
  host: '127.0.0.1',
  /** The node server's bounds on one request and on its headers. */
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 10_000,
} as const;

/**
 * The limits that must be whole numbers of at least 1: a hub holding 0 documents or 0-byte checkpoints could not
 * work. `maxAgents` may be 0 (a hub of documents and rooms, holding no agent: every registration is refused).
 */
const POSITIVE_LIMITS = [
  'maxMissedChecks',
  'maxDocuments',
  'maxDocumentBytes',
  'maxDocumentsPerClient',
  'maxRuns',
  'maxRunBytes',
  'maxRunsBytes',
] as const;

/** The hub's limits, each given or its default. */
export type HubLimits = { -readonly [K in (typeof POSITIVE_LIMITS)[number]]: number } & {
  maxAgents: number;
  checkIntervalMs: number;
  removeDownAfterMs: number;
  syncIntervalMs: number;
};

/**
 * The limits of a hub's options merged over {@link HUB_DEFAULTS}; a limit no hub can work with (a count or size of
 * 0, a fraction, a negative duration) is refused with `INVALID_ARGUMENT`, naming it, never replaced by its default.
 */
export function hubLimits(options: Partial<HubLimits>): HubLimits {
  const limits: HubLimits = {
    maxAgents: options.maxAgents ?? HUB_DEFAULTS.maxAgents,
    checkIntervalMs: options.checkIntervalMs ?? HUB_DEFAULTS.checkIntervalMs,
    maxMissedChecks: options.maxMissedChecks ?? HUB_DEFAULTS.maxMissedChecks,
    maxDocuments: options.maxDocuments ?? HUB_DEFAULTS.maxDocuments,
    maxDocumentBytes: options.maxDocumentBytes ?? HUB_DEFAULTS.maxDocumentBytes,
    maxDocumentsPerClient: options.maxDocumentsPerClient ?? HUB_DEFAULTS.maxDocumentsPerClient,
    maxRuns: options.maxRuns ?? HUB_DEFAULTS.maxRuns,
    maxRunBytes: options.maxRunBytes ?? HUB_DEFAULTS.maxRunBytes,
    maxRunsBytes: options.maxRunsBytes ?? HUB_DEFAULTS.maxRunsBytes,
    removeDownAfterMs: options.removeDownAfterMs ?? HUB_DEFAULTS.removeDownAfterMs,
    syncIntervalMs: options.syncIntervalMs ?? HUB_DEFAULTS.syncIntervalMs,
  };
  for (const name of POSITIVE_LIMITS) {
    const value = limits[name];
    if (!Number.isSafeInteger(value) || value < 1)
      throw new AgoraError('INVALID_ARGUMENT', `Hub option ${name} must be a positive integer, not ${value}`);
  }
  if (!Number.isSafeInteger(limits.maxAgents) || limits.maxAgents < 0)
    throw new AgoraError(
      'INVALID_ARGUMENT',
      `Hub option maxAgents must be 0 or a positive integer, not ${limits.maxAgents}`,
    );
  // An agent checked every 0 ms would be checked without end; removing one as soon as it is down, or syncing at
  // every round, are choices a hub may make.
  if (!Number.isFinite(limits.checkIntervalMs) || limits.checkIntervalMs <= 0)
    throw new AgoraError(
      'INVALID_ARGUMENT',
      `Hub option checkIntervalMs must be over 0 ms, not ${limits.checkIntervalMs}`,
    );
  for (const name of ['removeDownAfterMs', 'syncIntervalMs'] as const) {
    const value = limits[name];
    if (!Number.isFinite(value) || value < 0)
      throw new AgoraError('INVALID_ARGUMENT', `Hub option ${name} must be 0 ms or more, not ${value}`);
  }
  return limits;
}
