import { join, resolve } from 'node:path';
import type { ConversationStore } from './conversation/store.js';
import { startServer, type HttpOptions } from './http.js';
import type { LanguageModel } from './llm/toolformer.js';
import { consoleLogger, type Logger } from './log.js';
import { FileMemory, type AgentMemory } from './memory.js';
import { respondToNegotiation } from './negotiation.js';
import { Receiver, type ReceiverOptions } from './receiver.js';

/** Options of {@link startAgent}: the receiver's, the HTTP server's, and where state lives. */
export type AgentOptions = Omit<ReceiverOptions, 'store' | 'memory' | 'llm'> &
  HttpOptions & {
    port?: number;
    host?: string;
    /** `memory` (default) or a `redis://host:port/db` URL shared by several processes. */
    store?: string | ConversationStore;
    memory?: AgentMemory;
    /** The LLM; `'auto'` (default) uses Claude when ANTHROPIC_API_KEY is set. `null` disables it. */
    llm?: LanguageModel | 'auto' | null;
    /** Claude model for `'auto'`. */
    model?: string;
  };

/** A running agent: its receiver and HTTP server. */
export type RunningAgent = {
  receiver: Receiver;
  url: string;
  port: number;
  close(): Promise<void>;
};

/** Builds the LLM from the environment: Claude when a key is set, else none. */
export async function llmFromEnvironment(model?: string, env: NodeJS.ProcessEnv = process.env): Promise<LanguageModel | undefined> {
  const { AnthropicModel, hasAnthropicKey } = await import('./llm/anthropic.js');
  if (!hasAnthropicKey(env)) return undefined;
  return new AnthropicModel(model ? { model } : {});
}

/** Opens the conversation store and memory an agent will use (`memory` or a Redis URL). */
export async function openState(dir: string, store: string | ConversationStore | undefined, memory: AgentMemory | undefined): Promise<{ store?: ConversationStore; memory: AgentMemory; close(): Promise<void> }> {
  if (typeof store === 'string' && /^rediss?:\/\//.test(store)) {
    const { connectRedis } = await import('./conversation/redis.js');
    const redis = connectRedis(store);
    return { store: redis.store, memory: memory ?? redis.memory, close: () => redis.close() };
  }
  if (typeof store === 'string' && store !== 'memory') throw new Error(`--store must be "memory" or a redis:// URL, got ${JSON.stringify(store)}`);
  return { ...(typeof store === 'object' ? { store } : {}), memory: memory ?? new FileMemory(join(dir, '.agora')), close: async () => {} };
}

/**
 * Starts an agent from a folder: protocols, routines, tools, the LLM fallback, served over node:http.
 * @example const agent = await startAgent({ dir: '.', port: 3000 }); console.log(agent.url);
 */
export async function startAgent(options: AgentOptions = {}): Promise<RunningAgent> {
  const dir = resolve(options.dir ?? '.');
  const logger: Logger = options.logger ?? consoleLogger();
  const llm = options.llm === null ? undefined : options.llm === undefined || options.llm === 'auto' ? await llmFromEnvironment(options.model) : options.llm;
  const state = await openState(dir, options.store, options.memory);
  const { port, host, store: _store, memory: _memory, llm: _llm, model: _model, ...rest } = options;
  // Negotiation is answered by default; an extension given in the options takes precedence.
  const extensions = { negotiate: respondToNegotiation, ...rest.extensions };
  const receiver = await Receiver.start({ ...rest, dir, logger, extensions, ...(llm ? { llm } : {}), ...(state.store ? { store: state.store } : {}), memory: state.memory });
  try {
    const server = await startServer(receiver, { ...options, logger, port: port ?? 3000, ...(host ? { host } : {}) });
    return {
      receiver,
      url: server.url,
      port: server.port,
      async close() {
        await server.close();
        await receiver.close();
        await state.close();
      },
    };
  } catch (error) {
    await receiver.close();
    await state.close();
    throw error;
  }
}
