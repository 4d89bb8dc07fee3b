// Internal: the flags of `agora serve`, their defaults taken from the library's (in seconds where the flag is), and
// the checks of those that need more than a number.
import { AGENT_DEFAULTS } from '../agent/defaults.js';
import { isSharedStore } from '../agent/stores.js';
import { checkWorkers } from '../agent/workers.js';
import { parseFaceList, type FacesConfig } from '../bindings/faces.js';
import { FACE_NAMES } from '../bindings/index.js';
import { readTrustFile } from '../bindings/roar/trust.js';
import { numberOption, stringOption, UsageError, type OptionSpec, type ParsedArgs } from './_command.js';
import {
  ALLOWED_HOST_OPTION,
  AUTH_OPTIONS,
  CORS_ORIGIN_OPTION,
  TRACE_OPTION,
  listenOptions,
  llmOptions,
  RATE_LIMIT_OPTION,
  requiredTokensOption,
  storeOption,
  STORE_CONNECTION_OPTIONS,
} from './_options.js';
import { LOG_OPTIONS } from './_logging.js';

/** A duration of the library (ms) as a flag in seconds shows it. */
export function seconds(ms: number): string {
  return String(ms / 1000);
}

/** The flags of `agora serve`. */
export const SERVE_OPTIONS: Record<string, OptionSpec> = {
  ...listenOptions('PORT', AGENT_DEFAULTS.port),
  'public-url': {
    type: 'string',
    value: '<url>',
    description:
      'Public base URL behind a proxy, used in /wellknown sources; its host is answered (see --allowed-host)',
    env: 'AGORA_PUBLIC_URL',
  },
  'conversation-ttl': {
    type: 'string',
    value: '<seconds>',
    description: 'Idle seconds before a conversation expires',
    env: 'AGORA_CONVERSATION_TTL',
    default: seconds(AGENT_DEFAULTS.conversationTtlMs),
  },
  'routine-timeout': {
    type: 'string',
    value: '<seconds>',
    description: 'Seconds a routine may run',
    env: 'AGORA_ROUTINE_TIMEOUT',
    default: seconds(AGENT_DEFAULTS.routineTimeoutMs),
  },
  'isolate-routines': {
    type: 'boolean',
    description: 'Interrupt a routine that computes synchronously for over 500 ms (costs ~65 µs per call)',
    env: 'AGORA_ISOLATE_ROUTINES',
    default: false,
  },
  'report-usage': {
    type: 'boolean',
    description: "Tell callers each LLM turn's token counts and model (Agora-Usage header; never text)",
    env: 'AGORA_REPORT_USAGE',
    default: false,
  },
  'allow-private-sources': {
    type: 'boolean',
    description: 'Fetch protocol sources on loopback and private networks',
    env: 'AGORA_ALLOW_PRIVATE_SOURCES',
    default: false,
  },
  ...llmOptions("Model for the LLM fallback (default: the provider's)"),
  store: storeOption('Where conversations and learned state live', 'AGORA_STORE', AGENT_DEFAULTS.store),
  ...STORE_CONNECTION_OPTIONS,
  token: requiredTokensOption('(repeatable; /wellknown and /protocols/<hash> stay public)'),
  'rate-limit': RATE_LIMIT_OPTION,
  'max-conversations': {
    type: 'string',
    value: '<count>',
    description: 'Cap on live conversations',
    env: 'AGORA_MAX_CONVERSATIONS',
  },
  'tombstone-ttl': {
    type: 'string',
    value: '<seconds>',
    description:
      'Seconds an expired or ended conversation still answers "expired" (default and minimum: --conversation-ttl)',
    env: 'AGORA_TOMBSTONE_TTL',
  },
  'auto-approve': {
    type: 'boolean',
    description: 'Use routines the LLM writes once they pass their checks, without `agora routines approve`',
    env: 'AGORA_AUTO_APPROVE',
    default: AGENT_DEFAULTS.autoApprove,
  },
  'routine-threshold': {
    type: 'string',
    value: '<n>',
    description: 'LLM-served conversations under a protocol before the LLM writes a routine for it (0: never)',
    env: 'AGORA_ROUTINE_THRESHOLD',
    default: String(AGENT_DEFAULTS.routineThreshold),
  },
  faces: {
    type: 'string',
    value: '<list>',
    description: `Faces to serve: ${FACE_NAMES.join(', ')} (comma-separated)`,
    env: 'AGORA_FACES',
    default: FACE_NAMES.join(','),
  },
  'cors-origin': CORS_ORIGIN_OPTION,
  'allowed-host': ALLOWED_HOST_OPTION,
  ...AUTH_OPTIONS,
  'roar-secret': {
    type: 'string',
    value: '<secret>',
    description: 'ROAR messages must be HMAC-signed with it; replies are signed with it',
    env: 'AGORA_ROAR_SECRET',
  },
  'roar-trust': {
    type: 'string',
    value: '<file>',
    description: 'JSON object DID → hex Ed25519 key: ROAR messages must be signed by one of them',
    env: 'AGORA_ROAR_TRUST',
  },
  'max-body': {
    type: 'string',
    value: '<bytes>',
    description: 'Request body limit',
    env: 'AGORA_MAX_BODY',
    default: String(AGENT_DEFAULTS.maxBodyBytes),
  },
  'rescan-interval': {
    type: 'string',
    value: '<seconds>',
    description:
      'Seconds between safety rescans of protocols/, routines/ and tools/ for changes the watcher missed (0: never)',
    env: 'AGORA_RESCAN_INTERVAL',
    default: seconds(AGENT_DEFAULTS.rescanIntervalMs),
  },
  'max-document': {
    type: 'string',
    value: '<bytes>',
    description: "Largest protocol document accepted from a peer's sources (data: included)",
    env: 'AGORA_MAX_DOCUMENT',
    default: String(AGENT_DEFAULTS.maxDocumentBytes),
  },
  ...LOG_OPTIONS,
  trace: TRACE_OPTION,
  workers: {
    type: 'string',
    value: '<n>',
    description: 'Processes serving the one port (node cluster), each on every core; over 1 needs --store redis://…',
    env: 'AGORA_WORKERS',
    default: String(AGENT_DEFAULTS.workers),
  },
};

/** `--workers`: how many processes serve the port; more than one only on a shared (Redis) store. */
export function workersOption(args: ParsedArgs): number {
  const workers = numberOption(args, 'workers', { min: 1, integer: true }) ?? AGENT_DEFAULTS.workers;
  try {
    checkWorkers(workers, isSharedStore(stringOption(args, 'store') ?? AGENT_DEFAULTS.store));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  return workers;
}

// `--faces`, `--roar-secret`, `--roar-trust`: a bad list or trust file stops the start with one line.
/** The faces `agora serve` shows, and the keys of ROAR messages. */
export async function facesOption(args: ParsedArgs): Promise<FacesConfig> {
  let faces;
  try {
    faces = parseFaceList(stringOption(args, 'faces') ?? FACE_NAMES.join(','));
  } catch (error) {
    throw new UsageError(`--${(error as Error).message}`);
  }
  const secret = stringOption(args, 'roar-secret');
  const trustFile = stringOption(args, 'roar-trust');
  return {
    faces,
    roarSecret: secret || undefined,
    roarTrust: trustFile ? await readTrustFile(trustFile) : undefined,
  };
}
