import { AGENT_DEFAULTS } from '../agent/defaults.js';
import { startAgent } from '../agent.js';
import { isWorker, leaveCluster, runPrimary, startWorker } from '../agent/workers.js';
import { urlOf } from '../edge/node.js';
import { folderArgument, portOption, secondsOption, urlArgument } from './_arguments.js';
import { defineCommand, numberOption, stringOption, UsageError } from './_command.js';
import {
  allowedHosts,
  chooseLlm,
  corsOrigins,
  hostOf,
  KEY_ENV,
  oauthOption,
  storeOf,
  storeUsageError,
} from './_options.js';
import { commandLogger } from './_logging.js';
import { banner, dashboardNote } from './_serve-banner.js';
import { facesOption, SERVE_OPTIONS, workersOption } from './_serve-options.js';

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
    options: SERVE_OPTIONS,
    details: `Without an LLM (no --llm, ${KEY_ENV.join(' or ')}) the agent answers with routines only; natural language gets the fixed failure of the spec.`,
    async run(args) {
      if (args.positionals.length > 1)
        throw new UsageError(`too many arguments: serve takes one folder, got ${args.positionals.length}`);
      const dir = await folderArgument(args.positionals[0], '[dir]');
      const port = portOption(args);
      const conversationTtl =
        secondsOption(args, 'conversation-ttl', { min: 1 }) ?? AGENT_DEFAULTS.conversationTtlMs / 1000;
      const rescanInterval = secondsOption(args, 'rescan-interval', { min: 0 });
      const routineTimeout = secondsOption(args, 'routine-timeout');
      const workers = workersOption(args);
      const worker = startWorker();
      // A worker's records say which worker: in the name of every text line, as a field of every JSON record.
      const { logger, say, requestLog, requestLogSample } = commandLogger(args, 'agora', 'agora', worker);
      if (workers > 1 && !isWorker()) {
        const host = hostOf(args);
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
        min: conversationTtl,
      });
      const publicUrlText = stringOption(args, 'public-url');
      const publicUrl = publicUrlText === undefined ? undefined : urlArgument(publicUrlText, '--public-url');
      const llm = (await chooseLlm(args)) ?? null;
      const faces = await facesOption(args);
      const host = hostOf(args);
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
        reportUsage: args.values['report-usage'] === true,
        maxBodyBytes: numberOption(args, 'max-body', { min: 1, integer: true }),
        maxDocumentBytes: numberOption(args, 'max-document', { min: 1, integer: true }),
        store: storeOf(args),
        autoApprove: args.values['auto-approve'] === true,
        routineThreshold: numberOption(args, 'routine-threshold', { min: 0, integer: true }),
        faces,
        requestLog,
        requestLogSample,
        publicUrl,
        llm,
        tokens: tokens?.length ? tokens : undefined,
        oauth: oauthOption(args, publicUrl),
        rateLimit: rate ? { windowMs: 60_000, max: rate } : undefined,
        corsOrigins: cors.length > 0 ? cors : undefined,
        allowedHosts: allowedHosts(args),
        maxConversations,
      }).catch(storeUsageError);
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
