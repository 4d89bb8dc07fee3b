import { join, resolve } from 'node:path';
import type { Redis } from './_redis.js';
import type { RedisStoreOptions } from './conversation/redis.js';
import type { ConversationStore } from './conversation/store.js';
import { AgoraError } from './errors.js';
import type { FacesConfig } from './faces/index.js';
import type { AgentMountOptions, ServerOptions } from './agent/mounts.js';
import type { RunningServer } from './edge/node.js';
import { chooseModel } from './llm/choose.js';
import type { LanguageModel } from './llm/tool-loop.js';
import { consoleLogger, type Logger } from './log.js';
import { FileMemory, type AgentMemory } from './memory/file.js';
import { respondToNegotiation } from './negotiation.js';
import { Receiver, tombstoneMsOf, type ReceiverOptions } from './receiver.js';
import type { RoutineGenerator } from './generation/generate.js';
import type { AgentDashboard, AgentDashboardOptions } from './dashboard/agent-dashboard.js';
import type { ReceiverApi } from './receiver.js';

/** Options of {@link startAgent}: the receiver's, the HTTP server's, and where state lives. */
export type AgentOptions = Omit<ReceiverOptions, 'store' | 'memory' | 'llm'> &
  Omit<ServerOptions, 'dashboard' | 'port' | 'host'> & {
    port?: number;
    host?: string;
    /** `memory` (default) or a `redis://host:port/db` URL shared by several processes (`?prefix=…&lockTtlMs=…`, see {@link parseRedisStoreUrl}). */
    store?: string | ConversationStore;
    memory?: AgentMemory;
    /** The LLM; `'auto'` (default) uses Claude when ANTHROPIC_API_KEY is set. `null` disables it. */
    llm?: LanguageModel | 'auto' | null;
    /** Claude model for `'auto'`. */
    model?: string;
    /** LLM-served conversations under a protocol before the LLM writes a routine for it (default 5; 0: never). */
    routineThreshold?: number;
    /** Use routines the LLM writes as soon as they pass their checks, without `agora routines approve` (default false). */
    autoApprove?: boolean;
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

/** The store options a Redis store URL may carry in its query, beside what ioredis understands. */
const STORE_PARAMETERS = ['prefix', 'lockTtlMs', 'lockWaitMs', 'tombstoneMs'] as const;

/**
 * Splits a store Redis URL into the URL ioredis connects to and the store's own options, given as query
 * parameters: `prefix` (key prefix, default `agora:`), and `lockTtlMs`, `lockWaitMs`, `tombstoneMs` in ms.
 * @example parseRedisStoreUrl('redis://127.0.0.1:6379/0?prefix=shop:&lockTtlMs=5000')
 */
export function parseRedisStoreUrl(text: string): { url: string; options: RedisStoreOptions } {
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    // Not echoed: the URL may hold a password.
    throw new AgoraError('INVALID_ARGUMENT', 'store: not a valid redis:// URL');
  }
  const options: RedisStoreOptions = {};
  for (const name of STORE_PARAMETERS) {
    const value = parsed.searchParams.get(name);
    if (value === null) continue;
    parsed.searchParams.delete(name);
    if (name === 'prefix') {
      if (!value) throw new AgoraError('INVALID_ARGUMENT', 'store: prefix must not be empty');
      options.prefix = value;
      continue;
    }
    const number = Number(value);
    if (!Number.isSafeInteger(number) || number < 1)
      throw new AgoraError(
        'INVALID_ARGUMENT',
        `store: ${name} must be a positive integer of milliseconds, got ${JSON.stringify(value)}`,
      );
    options[name] = number;
  }
  // Other parameters (family, tls…) stay for ioredis; a bare `?` left behind would be harmless but untidy.
  const url = parsed.search ? parsed.href : parsed.href.replace(/\?$/, '');
  return { url, options };
}

/** Opens the conversation store and memory an agent will use (`memory` or a Redis URL, see {@link parseRedisStoreUrl}). */
export async function openState(
  dir: string,
  store: string | ConversationStore | undefined,
  memory: AgentMemory | undefined,
  defaults: RedisStoreOptions = {},
  logger?: Logger,
): Promise<{
  store?: ConversationStore;
  memory: AgentMemory;
  redis?: { client: Redis; prefix: string };
  close(): Promise<void>;
}> {
  if (typeof store === 'string' && /^rediss?:\/\//.test(store)) {
    const { url, options } = parseRedisStoreUrl(store);
    const { connectRedis } = await import('./conversation/redis.js');
    const redis = connectRedis(url, { ...defaults, ...options, ...(logger ? { logger } : {}) });
    // An unreachable Redis is one clear failure naming its address, not a start that hangs on retries.
    await redis.ready().catch(async (error: unknown) => {
      await redis.close();
      throw error;
    });
    return {
      store: redis.store,
      memory: memory ?? redis.memory,
      redis: { client: redis.redis, prefix: options.prefix ?? defaults.prefix ?? 'agora:' },
      close: () => redis.close(),
    };
  }
  if (typeof store === 'string' && store !== 'memory')
    throw new AgoraError('INVALID_ARGUMENT', `store: must be "memory" or a redis:// URL, got ${JSON.stringify(store)}`);
  return {
    ...(typeof store === 'object' ? { store } : {}),
    memory: memory ?? new FileMemory(join(dir, '.agora')),
    close: async () => {},
  };
}

/**
 * Starts an agent from a folder: protocols, routines, tools, the LLM fallback, served over node:http. It listens
 * before `protocols/` is fully read and resolves once it is (with `waitForProtocols: false`, once it listens).
 * @example const agent = await startAgent({ dir: '.', port: 3000 }); console.log(agent.url);
 */
export async function startAgent(options: AgentOptions = {}): Promise<RunningAgent> {
  const dir = resolve(options.dir ?? '.');
  const logger: Logger = options.logger ?? consoleLogger();
  const llm =
    options.llm === null
      ? undefined
      : options.llm === undefined || options.llm === 'auto'
        ? chooseModel(options.model ? { model: options.model } : {})
        : options.llm;
  // Spec §2: an expired id answers "Conversation expired" for at least one TTL (unless the URL sets tombstoneMs).
  const state = await openState(dir, options.store, options.memory, { tombstoneMs: tombstoneMsOf(options) }, logger);
  const {
    port,
    host,
    store: _store,
    memory: _memory,
    llm: _llm,
    model: _model,
    routineThreshold,
    autoApprove,
    dashboard: dashboardOption,
    ...rest
  } = options;
  // Made once the receiver exists; the generator tells it of each routine status it writes.
  let dashboard: AgentDashboard | undefined;
  // With an LLM, frequent protocols get LLM-written routines (checked, then approved); the closures read the
  // receiver created below, and only run once it serves.
  // The writer of routines (and its QuickJS sandbox) loads only for an agent with an LLM.
  const generator = llm
    ? new (await import('./generation/generate.js')).RoutineGenerator({
        dir,
        memory: state.memory,
        llm,
        logger,
        tools: () => receiver.tools,
        profile: () => receiver.profile(),
        onUsage: (usage, protocol) =>
          receiver.counters.llmCall(protocol, 'routine', usage.inputTokens, usage.outputTokens),
        ...(routineThreshold !== undefined ? { threshold: routineThreshold } : {}),
        ...(autoApprove !== undefined ? { autoApprove } : {}),
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
      llm: llm ?? null,
      ...(state.store ? { store: state.store } : {}),
      memory: state.memory,
    });
  } catch (error) {
    await generator?.close();
    await state.close();
    throw error;
  }
  try {
    const faces = await facesWithState(options.faces, state.redis?.client);
    // With a Redis store, every process of the agent counts each client in one place.
    const rateLimit =
      options.rateLimit && state.redis && !options.rateLimit.redis
        ? { ...options.rateLimit, redis: state.redis.client, prefix: state.redis.prefix }
        : options.rateLimit;
    const { createAgentDashboard } = await import('./dashboard/agent-dashboard.js');
    dashboard =
      dashboardOption === false
        ? undefined
        : createAgentDashboard(receiver, {
            logger,
            ...(options.tokens ? { tokens: options.tokens } : {}),
            ...(generator ? { onReviewed: () => generator.forgetStatuses() } : {}),
            ...(typeof dashboardOption === 'object' && dashboardOption.recorder
              ? { recorder: dashboardOption.recorder }
              : {}),
          });
    const server = await startServer(receiver, {
      ...rest,
      faces,
      logger,
      port: port ?? 3000,
      ...(host ? { host } : {}),
      ...(rateLimit ? { rateLimit } : {}),
      dashboard: dashboard ?? false,
    }).catch((error: unknown) => {
      dashboard?.close?.();
      throw error;
    });
    const running: RunningAgent = {
      receiver,
      url: server.url,
      port: server.port,
      ...(generator ? { generator } : {}),
      ...(dashboard ? { dashboard, dashboardUrl: `${server.url}/dashboard/` } : {}),
      async close() {
        await server.close();
        await generator?.close();
        await receiver.close();
        await state.close();
      },
    };
    if (options.waitForProtocols !== false) await receiver.loaded();
    return running;
  } catch (error) {
    await generator?.close();
    await receiver.close();
    await state.close();
    throw error;
  }
}

// With a Redis store, ROAR message ids are remembered there, so every process of the agent refuses a replay.
async function facesWithState(
  faces: FacesConfig | false | undefined,
  redis: Redis | undefined,
): Promise<FacesConfig | false | undefined> {
  if (faces === false || redis === undefined || faces?.replay !== undefined) return faces;
  const { RedisReplayGuard } = await import('./faces/roar/replay-redis.js');
  return { ...faces, replay: new RedisReplayGuard(redis) };
}
