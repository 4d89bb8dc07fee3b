import { resolve } from 'node:path';
import { AGENT_DEFAULTS, withDefaults } from './agent/defaults.js';
import { openStores, type AgentStores } from './agent/stores.js';
import type { ConversationStore } from './conversation/store.js';
import type { AgentMountOptions, ServerOptions } from './agent/mounts.js';
import type { RunningServer } from './edge/node.js';
import { chooseModel } from './llm/choose.js';
import type { LanguageModel } from './llm/model.js';
import { consoleLogger, type Logger } from './log.js';
import type { AgentMemory } from './memory/file.js';
import { respondToNegotiation } from './negotiation.js';
import { Receiver, tombstoneMsOf, type ReceiverOptions } from './receiver.js';
import type { RoutineGenerator } from './generation/generate.js';
import type { RoutineTypeChecker } from './generation/checks/typecheck.js';
import type { AgentDashboard, AgentDashboardOptions } from './dashboard/agent-dashboard.js';
import type { ReceiverApi } from './receiver.js';
import { installHint, missingPackages, ROUTINE_WRITER_PACKAGES } from './_optional.js';

/** Options of {@link startAgent}: the receiver's, the HTTP server's, and where state lives. */
export type AgentOptions = Omit<ReceiverOptions, 'store' | 'memory' | 'llm' | 'typeCheck'> &
  Omit<ServerOptions, 'dashboard' | 'port' | 'host'> & {
    port?: number;
    host?: string;
    /** `memory` (default) or a `redis://host:port/db` URL shared by several processes (`?prefix=…&lockTtlMs=…`, see `parseStoreUrl`). */
    store?: string | ConversationStore;
    memory?: AgentMemory;
    /**
     * The LLM (default none: routines only); `'auto'` reads `process.env` as `agora serve` does (`AGORA_LLM`, else
     * the provider whose key is set: ANTHROPIC_API_KEY, OPENAI_API_KEY…).
     */
    llm?: LanguageModel | 'auto' | null;
    /** The model for `'auto'` (else AGORA_MODEL, else the provider's default). */
    model?: string;
    /** LLM-served conversations under a protocol before the LLM writes a routine for it (default 5; 0: never). */
    routineThreshold?: number;
    /** Use routines the LLM writes as soon as they pass their checks, without `agora routines approve` (default false). */
    autoApprove?: boolean;
    /** The type-checker of routines (default: the agent's own); agents of one process may share one (left open). */
    typeChecker?: RoutineTypeChecker;
    /**
     * Type-check `routines/` and `tools/` as they load, in a worker thread, each error a warning naming the file and
     * line (default true; the file is served all the same; skipped when TypeScript is not installed).
     */
    typeCheck?: boolean;
    /** `GET /dashboard` (default on; `false` serves none). Its tokens are the agent's `tokens`. */
    dashboard?: boolean | Pick<AgentDashboardOptions, 'recorder'>;
  };

/** A running agent: its receiver and HTTP server. */
export type RunningAgent = {
  receiver: Receiver;
  url: string;
  port: number;
  /** The writer of LLM-written routines (with an LLM): its `idle()` waits for background generation. */
  generator?: RoutineGenerator;
  /** The dashboard's address (`<url>/dashboard/`), unless turned off. */
  dashboardUrl?: string;
  /** The dashboard, unless turned off: its recorder holds what the page shows over time. */
  dashboard?: AgentDashboard;
  close(): Promise<void>;
};

/**
 * Serves a receiver on node:http: the Agora wire, its faces and its dashboard behind one edge (tokens, rate limit,
 * body cap, cross-site rule). The server machinery is loaded here, on first use.
 * @example const { url, close } = await startServer(receiver, { port: 0 });
 */
export async function startServer(receiver: ReceiverApi, options: ServerOptions = {}): Promise<RunningServer> {
  const { serveReceiver } = await import('./agent/mounts.js');
  return serveReceiver(receiver, options);
}

export type { AgentMountOptions, ServerOptions, RunningServer };

/**
 * Starts an agent from a folder: protocols, routines, tools, the LLM fallback, served over node:http. It listens
 * before `protocols/` is fully read and resolves once it is (with `waitForProtocols: false`, once it listens).
 * @example const agent = await startAgent({ dir: '.', port: 3000 }); console.log(agent.url);
 */
export async function startAgent(options: AgentOptions = {}): Promise<RunningAgent> {
  const dir = resolve(options.dir ?? '.');
  const logger: Logger = options.logger ?? consoleLogger();
  const {
    port,
    host,
    store,
    memory,
    llm: llmOption,
    model,
    routineThreshold,
    autoApprove,
    typeChecker: sharedChecker,
    dashboard: dashboardOption,
    typeCheck: typeCheckOption,
    ...rest
  } = withDefaults(AGENT_DEFAULTS, options);
  // The agent's entry is the one place of the library that reads the environment, and only when asked ('auto').
  const llm = llmOption === 'auto' ? chooseModel({ model }, process.env) : (llmOption ?? undefined);
  // One type checker (a worker thread, started on the first check) for hand-written files and the LLM's routines.
  // Hand-written files are checked when TypeScript (an optional peer) is installed.
  const typeCheck = typeCheckOption && missingPackages(['typescript']).length === 0;
  const ownChecker =
    !sharedChecker && (typeCheck || (llm && missingPackages(ROUTINE_WRITER_PACKAGES).length === 0))
      ? new (await import('./generation/checks/typecheck.js')).RoutineTypeChecker()
      : undefined;
  const typeChecker = sharedChecker ?? ownChecker;
  // Spec §2: an expired id answers "Conversation expired" for at least one TTL (unless the URL sets tombstoneMs).
  const stores = await openStores(store, {
    role: 'agent',
    dir,
    memory,
    redis: { tombstoneMs: tombstoneMsOf(options) },
    logger,
  });
  // Made once the receiver exists; the generator tells it of each routine status it writes.
  let dashboard: AgentDashboard | undefined;
  // With an LLM, frequent protocols get LLM-written routines (checked, then approved); the closures read the
  // receiver created below, and only run once it serves.
  // The writer of routines (and its QuickJS sandbox) loads only for an agent with an LLM, and with its packages.
  const writerMissing = llm ? missingPackages(ROUTINE_WRITER_PACKAGES) : [];
  if (writerMissing.length)
    logger.warn(`routines are not written: ${installHint('the routine writer', writerMissing)}`);
  const generator =
    llm && !writerMissing.length
      ? new (await import('./generation/generate.js')).RoutineGenerator({
          dir,
          memory: stores.memory,
          llm,
          logger,
          tools: () => receiver.tools,
          profile: () => receiver.profile(),
          onUsage: (usage, protocol) =>
            receiver.counters.llmCall(protocol, 'routine', usage.inputTokens, usage.outputTokens),
          threshold: routineThreshold,
          autoApprove,
          ...(typeChecker ? { typeChecker } : {}),
          onStatus: () => dashboard?.routinesChanged(),
        })
      : undefined;
  // Negotiation is answered by default; an extension given in the options takes precedence.
  const extensions = { negotiate: respondToNegotiation, ...generator?.extensions(), ...rest.extensions };
  let receiver: Receiver;
  try {
    // Listening comes before protocols/ is fully read: a large folder takes seconds, and meanwhile the agent answers
    // (what it finds at once, /health; a miss waits for the load).
    receiver = await Receiver.start({
      ...rest,
      waitForProtocols: false,
      dir,
      logger,
      extensions,
      typeCheck: typeCheck ? (files, root) => typeChecker!.checkFiles(files, root) : undefined,
      llm: llm ?? null,
      store: stores.conversations,
      memory: stores.memory,
    });
  } catch (error) {
    await generator?.close();
    await ownChecker?.close();
    await stores.close();
    throw error;
  }
  try {
    const server = await serve(receiver, { ...rest, port, host, logger, dashboard: dashboardOption }, stores, () =>
      generator?.forgetStatuses(),
    );
    dashboard = server.dashboard;
    const running: RunningAgent = {
      receiver,
      url: server.url,
      port: server.port,
      generator,
      dashboard,
      dashboardUrl: dashboard && `${server.url}/dashboard/`,
      async close() {
        await server.close();
        await generator?.close();
        await receiver.close();
        await ownChecker?.close();
        await stores.close();
      },
    };
    if (options.waitForProtocols !== false) await receiver.loaded();
    return running;
  } catch (error) {
    await generator?.close();
    await receiver.close();
    await ownChecker?.close();
    await stores.close();
    throw error;
  }
}

type ServeOptions = Omit<AgentOptions, 'dashboard'> & { port: number; dashboard: AgentOptions['dashboard'] };

// Serves the receiver with its dashboard; with a Redis store every process of the agent refuses a ROAR replay and
// counts each client in one place.
async function serve(
  receiver: Receiver,
  options: ServeOptions,
  stores: AgentStores,
  onReviewed: () => void,
): Promise<RunningServer & { dashboard?: AgentDashboard }> {
  const { dashboard: dashboardOption, faces, rateLimit, logger } = options;
  const shared = stores.shared;
  const { createAgentDashboard } = await import('./dashboard/agent-dashboard.js');
  const dashboard =
    dashboardOption === false
      ? undefined
      : createAgentDashboard(receiver, {
          logger,
          tokens: options.tokens,
          oauth: options.oauth !== undefined,
          onReviewed,
          recorder: typeof dashboardOption === 'object' ? dashboardOption.recorder : undefined,
        });
  const server = await startServer(receiver, {
    ...options,
    faces:
      faces === false || faces?.replay !== undefined || !stores.replay ? faces : { ...faces, replay: stores.replay },
    rateLimit: rateLimit && shared && !rateLimit.redis ? { ...rateLimit, ...shared } : rateLimit,
    dashboard: dashboard ?? false,
  }).catch((error: unknown) => {
    dashboard?.close?.();
    throw error;
  });
  return { ...server, dashboard };
}
