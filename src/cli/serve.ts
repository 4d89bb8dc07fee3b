import { startAgent, type RunningAgent } from '../agent.js';
import { checkWorkers, isWorker, leaveCluster, runPrimary, startWorker } from '../agent/workers.js';
import { urlOf } from '../edge/node.js';
import { isAgoraError } from '../errors.js';
import { RECEIVER_DEFAULTS, type Receiver } from '../receiver.js';
import { folderArgument, portOption, secondsOption, urlArgument } from './_arguments.js';
import { FACE_NAMES, parseFaceList, type FacesConfig } from '../faces/index.js';
import { readTrustFile } from '../faces/roar/trust.js';
import { defineCommand, numberOption, stringOption, UsageError, type ParsedArgs } from './_command.js';
import type { LogFields } from '../log.js';
import {
  chooseLlm,
  commandLogger,
  CORS_ORIGIN_OPTION,
  corsOrigins,
  LOG_OPTIONS,
  listenOptions,
  llmLabel,
  llmOptions,
  RATE_LIMIT_OPTION,
  requiredTokensOption,
  storeOption,
} from './_options.js';

/** The documents of `protocols/` that `/wellknown` does not list (spec §4: no routine, no LLM), and why. */
async function unservedLines(receiver: Receiver): Promise<string[]> {
  const listed = new Set(Object.keys(await receiver.wellknown()));
  return receiver.registry
    .local()
    .filter(({ document }) => !listed.has(document.hash))
    .map(
      ({ name }) =>
        `not served: protocols/${name}.md (no routines/${name}.ts and no LLM: add the routine, or pick an LLM: --llm, ANTHROPIC_API_KEY, or --llm offline for a demo)`,
    );
}

/** A number of seconds from a flag, in ms (undefined when the flag was not given). */
function msOf(seconds: number | undefined): number | undefined {
  return seconds === undefined ? undefined : Math.round(seconds * 1000);
}

/** `agora serve [dir]`: serves an agent folder until SIGINT/SIGTERM. */
export const command = defineCommand(
  {
    name: 'serve',
    summary: 'Serve an agent folder (protocols/, routines/, tools/) over HTTP',
    usage: 'agora serve [dir] [options]',
  },
  {
    options: {
      ...listenOptions('PORT', 3000),
      'public-url': {
        type: 'string',
        value: '<url>',
        description: 'Public base URL behind a proxy, used in /wellknown sources',
        env: 'AGORA_PUBLIC_URL',
      },
      'conversation-ttl': {
        type: 'string',
        value: '<seconds>',
        description: 'Idle seconds before a conversation expires',
        env: 'AGORA_CONVERSATION_TTL',
        default: String(RECEIVER_DEFAULTS.conversationTtlMs / 1000),
      },
      'routine-timeout': {
        type: 'string',
        value: '<seconds>',
        description: 'Seconds a routine may run',
        env: 'AGORA_ROUTINE_TIMEOUT',
        default: String(RECEIVER_DEFAULTS.routineTimeoutMs / 1000),
      },
      'isolate-routines': {
        type: 'boolean',
        description: 'Interrupt a routine that computes synchronously for over 500 ms (costs ~65 µs per call)',
        env: 'AGORA_ISOLATE_ROUTINES',
        default: false,
      },
      'allow-private-sources': {
        type: 'boolean',
        description: 'Fetch protocol sources on loopback and private networks',
        env: 'AGORA_ALLOW_PRIVATE_SOURCES',
        default: false,
      },
      ...llmOptions("Model for the LLM fallback (default: the provider's)"),
      store: storeOption('Where conversations and learned state live', 'AGORA_STORE'),
      token: requiredTokensOption('(repeatable; /wellknown and /protocols stay public)'),
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
        default: false,
      },
      'routine-threshold': {
        type: 'string',
        value: '<n>',
        description: 'LLM-served conversations under a protocol before the LLM writes a routine for it (0: never)',
        env: 'AGORA_ROUTINE_THRESHOLD',
        default: '5',
      },
      faces: {
        type: 'string',
        value: '<list>',
        description: `Faces to serve: ${FACE_NAMES.join(', ')} (comma-separated)`,
        env: 'AGORA_FACES',
        default: FACE_NAMES.join(','),
      },
      'cors-origin': CORS_ORIGIN_OPTION,
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
        default: String(1024 * 1024),
      },
      'rescan-interval': {
        type: 'string',
        value: '<seconds>',
        description:
          'Seconds between safety rescans of protocols/, routines/ and tools/ for changes the watcher missed (0: never)',
        env: 'AGORA_RESCAN_INTERVAL',
        default: String(RECEIVER_DEFAULTS.rescanIntervalMs / 1000),
      },
      'max-document': {
        type: 'string',
        value: '<bytes>',
        description: "Largest protocol document accepted from a peer's sources (data: included)",
        env: 'AGORA_MAX_DOCUMENT',
        default: String(64 * 1024),
      },
      ...LOG_OPTIONS,
      workers: {
        type: 'string',
        value: '<n>',
        description:
          'Processes serving the one port (node cluster), each on every core; over 1 needs --store redis://…',
        env: 'AGORA_WORKERS',
        default: '1',
      },
    },
    details:
      'Without an LLM (no --llm, ANTHROPIC_API_KEY or OPENAI_API_KEY) the agent answers with routines only; natural language gets the fixed failure of the spec.',
    async run(args) {
      if (args.positionals.length > 1)
        throw new UsageError(`too many arguments: serve takes one folder, got ${args.positionals.length}`);
      const dir = await folderArgument(args.positionals[0], '[dir]');
      const port = portOption(args) ?? 3000;
      // The flags are in seconds; the library's durations in ms (its defaults apply to a flag not given).
      const conversationTtl = secondsOption(args, 'conversation-ttl', { min: 1 });
      const rescanInterval = secondsOption(args, 'rescan-interval', { min: 0 });
      const routineTimeout = secondsOption(args, 'routine-timeout');
      const workers = workersOption(args);
      const worker = startWorker();
      // A worker's records say which worker: in the name of every text line, as a field of every JSON record.
      const { logger, say, requestLog } = commandLogger(args, 'agora', 'agora', worker);
      if (workers > 1 && !isWorker()) {
        const host = stringOption(args, 'host') ?? '127.0.0.1';
        return runPrimary({
          workers,
          logger,
          onListening: (listening) =>
            say(`${workers} workers listening on ${urlOf(host, listening)}`, {
              event: 'listening',
              url: urlOf(host, listening),
              workers,
            }),
        });
      }
      const tokens = args.values.token as string[] | undefined;
      const rate = numberOption(args, 'rate-limit', { min: 1, integer: true });
      const cors = corsOrigins(args);
      const maxConversations = numberOption(args, 'max-conversations', { min: 1, integer: true });
      const tombstoneTtl = secondsOption(args, 'tombstone-ttl', {
        min: conversationTtl ?? RECEIVER_DEFAULTS.conversationTtlMs / 1000,
      });
      const publicUrlText = stringOption(args, 'public-url');
      const publicUrl = publicUrlText === undefined ? undefined : urlArgument(publicUrlText, '--public-url');
      const llm = (await chooseLlm(args)) ?? null;
      const faces = await facesOption(args);
      const host = stringOption(args, 'host') ?? '127.0.0.1';
      const agent = await startAgent({
        dir,
        logger,
        port,
        host,
        conversationTtlMs: msOf(conversationTtl),
        routineTimeoutMs: msOf(routineTimeout),
        rescanIntervalMs: msOf(rescanInterval),
        tombstoneTtlMs: msOf(tombstoneTtl),
        // Resolves once listening: the banner below waits for protocols/ itself, saying meanwhile where it answers.
        waitForProtocols: false,
        allowPrivateSources: args.values['allow-private-sources'] === true,
        isolateRoutines: args.values['isolate-routines'] === true,
        maxBodyBytes: numberOption(args, 'max-body', { min: 1, integer: true }) ?? 1024 * 1024,
        maxDocumentBytes: numberOption(args, 'max-document', { min: 1, integer: true }) ?? 64 * 1024,
        store: stringOption(args, 'store') ?? 'memory',
        autoApprove: args.values['auto-approve'] === true,
        routineThreshold: numberOption(args, 'routine-threshold', { min: 0, integer: true }) ?? 5,
        faces,
        requestLog,
        ...(publicUrl ? { publicUrl } : {}),
        llm,
        ...(tokens?.length ? { tokens } : {}),
        ...(rate ? { rateLimit: { windowMs: 60_000, max: rate } } : {}),
        ...(cors.length > 0 ? { corsOrigins: cors } : {}),
        ...(maxConversations ? { maxConversations } : {}),
      }).catch((error: unknown) => {
        // The library names its `store` option; here the user typed `--store`.
        if (isAgoraError(error) && error.code === 'INVALID_ARGUMENT' && error.message.startsWith('store:'))
          throw new Error(`--${error.message.replace(/^store: must/, 'store must')}`);
        throw error;
      });
      const { receiver } = agent;
      // Signals are heard from now on: the agent already answers while protocols/ is read.
      let stopping = false;
      const stopped = new Promise<void>((done) => {
        const stop = (signal: string) => {
          if (stopping) return;
          stopping = true;
          logger.info(`${signal}: shutting down`);
          agent.close().finally(done);
        };
        process.once('SIGINT', () => stop('SIGINT'));
        process.once('SIGTERM', () => stop('SIGTERM'));
      });
      if (receiver.loading()) {
        say(`reading protocols/; answering meanwhile on ${agent.url}`, { event: 'loading', url: agent.url });
        await receiver.loaded();
      }
      if (!stopping) await banner(agent, say, worker, dashboardNote(host, tokens?.length ?? 0));
      await stopped;
      const { queries, llmCalls, inputTokens, outputTokens } = receiver.counters.snapshot();
      say(receiver.counters.summary(), {
        event: 'summary',
        routineQueries: queries.routine,
        llmQueries: queries.llm,
        failedQueries: queries.failure,
        llmCalls,
        inputTokens,
        outputTokens,
      });
      leaveCluster();
      return 0;
    },
  },
);

type Say = (line: string, fields?: LogFields) => void;

/** What `agora serve` says once `protocols/` is read: what it serves, what it does not and why, where it listens. */
async function banner(agent: RunningAgent, say: Say, worker: number | undefined, dashboardNote: string): Promise<void> {
  const { receiver } = agent;
  const protocols = receiver.registry.local();
  const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;
  say(
    `serving ${receiver.name} (${count(protocols.length, 'protocol')}, ${count(receiver.routines.size, 'routine')}, ${count(receiver.tools.length, 'tool')}, LLM: ${llmLabel(receiver.llm)})`,
    {
      event: 'serving',
      agent: receiver.name,
      protocols: protocols.length,
      routines: receiver.routines.size,
      tools: receiver.tools.length,
      llm: llmLabel(receiver.llm),
      ...(receiver.llm?.provider === 'offline' ? { demo: true } : {}),
    },
  );
  for (const line of await unservedLines(receiver)) say(line, { event: 'not-served' });
  for (const server of receiver.mcpServers()) {
    const state =
      server.state === 'failed'
        ? `FAILED (${server.error ?? 'unknown'}); serving without its tools`
        : server.state === 'idle'
          ? 'not started yet (it starts when one of its tools is first needed)'
          : count(server.tools, 'tool');
    say(`MCP server ${server.name}: ${state}`, {
      event: 'mcp-server',
      server: server.name,
      state: server.state,
      tools: server.tools,
    });
  }
  // With workers, the primary says where all of them listen, once they do.
  if (worker === undefined) say(`listening on ${agent.url}`, { event: 'listening', url: agent.url });
  else say(`worker ready on ${agent.url}`, { event: 'worker-ready', url: agent.url });
  if (agent.dashboardUrl)
    say(`dashboard at ${agent.dashboardUrl}${dashboardNote}`, { event: 'dashboard', url: agent.dashboardUrl });
}

/** `--workers`: how many processes serve the port; more than one only on a shared (Redis) store. */
function workersOption(args: ParsedArgs): number {
  const workers = numberOption(args, 'workers', { min: 1, integer: true }) ?? 1;
  try {
    checkWorkers(workers, /^rediss?:\/\//.test(stringOption(args, 'store') ?? 'memory'));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  return workers;
}

// What the dashboard shows under the token rules: read-only on loopback without a token, off beyond it.
function dashboardNote(host: string, tokens: number): string {
  if (tokens > 0) return ' (sign in with your token)';
  return /^(127\.|::1$|localhost$|\[::1\]$)/.test(host)
    ? ' (read-only: set --token to approve routines from it)'
    : ' (off: it needs --token when listening beyond loopback)';
}

// `--faces`, `--roar-secret`, `--roar-trust`: a bad list or trust file stops the start with one line.
async function facesOption(args: ParsedArgs): Promise<FacesConfig> {
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
    ...(secret ? { roarSecret: secret } : {}),
    ...(trustFile ? { roarTrust: await readTrustFile(trustFile) } : {}),
  };
}
