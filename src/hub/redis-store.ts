import { z } from 'zod';
import { quit, type RedisClient, runScript, tag } from '../_redis.js';
import { openRedis, storeCall, type RedisLog } from '../_redis-connection.js';
import {
  agentRecordSchema,
  catalogueEntrySchema,
  chainRunSchema,
  type AgentRecord,
  type CatalogueEntry,
  type ChainRun,
} from './records.js';
import { type AgentChanges, type DocumentChanges, type HubStore, type PutDocumentResult } from './store.js';
import { CLAIM, DELETE_AGENT, DELETE_RUN, PUT_CAPPED, PUT_DOCUMENT, PUT_RUN, RELEASE } from './redis-lua.js';

/** Options of {@link RedisHubStore}. */
export type RedisHubStoreOptions = {
  /** Prefix of every key (default `agora-hub:`), so several hubs can share one Redis. */
  prefix?: string;
  /**
   * Where records that fail to parse are reported (they are skipped, never trusted), and Redis going and coming back.
   */
  logger?: { warn(message: string): void; info?(message: string): void };
};

/** The store's logger as its connection reports to it. */
function redisLog(logger: RedisHubStoreOptions['logger']): RedisLog | undefined {
  return (
    logger && {
      warn: (message) => logger.warn(`hub store: ${message}`),
      info: (message) => logger.info?.(`hub store: ${message}`),
    }
  );
}

/**
 * The hub's state in Redis: several hub processes share it, and a restarted hub loses nothing.
 * @example const store = new RedisHubStore('redis://127.0.0.1:6379/0', { prefix: 'hub:' });
 */
export class RedisHubStore implements HubStore {
  readonly #redis: RedisClient;
  readonly #owned: boolean;
  readonly #keys: {
    agents: string;
    documents: string;
    texts: string;
    version: string;
    runs: string;
    lease: string;
    agentChanges: string;
    agentFloor: string;
    documentChanges: string;
    documentFloor: string;
    clientAdds: string;
  };
  readonly #logger: { warn(message: string): void };

  /** @param redis a connection (left open on close) or a `redis://` URL (connected here, closed on close). */
  constructor(redis: RedisClient | string, options: RedisHubStoreOptions = {}) {
    this.#owned = typeof redis === 'string';
    // Opened as every connection of the framework is: commands time out, an outage is logged once, never a hang.
    this.#redis = typeof redis === 'string' ? openRedis(redis, redisLog(options.logger)) : redis;
    const prefix = options.prefix ?? 'agora-hub:';
    // The directory, the catalogue and their change log are written together by one script, with one version: in a
    // cluster they share one slot (the hash tag `{<prefix>hub}`). Runs share another; leases and counts are keys
    // of their own, spread over the cluster.
    const hub = `${prefix}${tag(`${prefix}hub`)}`;
    const runs = `${prefix}${tag(`${prefix}runs`)}`;
    this.#keys = {
      agents: `${hub}agents`,
      documents: `${hub}documents`,
      texts: `${hub}texts`,
      version: `${hub}version`,
      runs: `${runs}runs`,
      lease: `${prefix}lease:`,
      agentChanges: `${hub}changes:agents`,
      agentFloor: `${hub}changes:agents:floor`,
      documentChanges: `${hub}changes:documents`,
      documentFloor: `${hub}changes:documents:floor`,
      clientAdds: `${prefix}client-adds`,
    };
    this.#logger = options.logger ?? console;
  }

  #parse<T>(schema: z.ZodType<T>, raw: string | null | undefined, what: string): T | undefined {
    if (raw === null || raw === undefined) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      this.#logger.warn(`hub store: ${what} is not JSON: skipped`);
      return undefined;
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      this.#logger.warn(`hub store: ${what} is malformed: ${z.prettifyError(parsed.error).split('\n')[0]}`);
      return undefined;
    }
    return parsed.data;
  }

  #parseAll<T>(schema: z.ZodType<T>, values: Record<string, string>, what: string): T[] {
    const result: T[] = [];
    for (const [key, raw] of Object.entries(values)) {
      const value = this.#parse(schema, raw, `${what} ${key}`);
      if (value !== undefined) result.push(value);
    }
    return result;
  }

  /** One Redis call: Redis unreachable is STORE_UNAVAILABLE (answered 503), refused at once while it is known down. */
  #call<T>(call: () => Promise<T>): Promise<T> {
    return storeCall(this.#redis, call);
  }

  async putAgent(record: AgentRecord, cap: number): Promise<boolean> {
    return (
      (await this.#call(() =>
        runScript(
          this.#redis,
          PUT_CAPPED,
          [this.#keys.agents, this.#keys.version, this.#keys.agentChanges, this.#keys.agentFloor],
          [record.id, JSON.stringify(record), cap],
        ),
      )) === 1
    );
  }

  async getAgent(id: string): Promise<AgentRecord | undefined> {
    return this.#parse(
      agentRecordSchema,
      await this.#call(() => this.#redis.hget(this.#keys.agents, id)),
      `agent ${id}`,
    );
  }

  async deleteAgent(id: string): Promise<boolean> {
    return (
      (await this.#call(() =>
        runScript(
          this.#redis,
          DELETE_AGENT,
          [this.#keys.agents, this.#keys.version, this.#keys.agentChanges, this.#keys.agentFloor],
          [id],
        ),
      )) === 1
    );
  }

  async listAgents(): Promise<AgentRecord[]> {
    return this.#parseAll(agentRecordSchema, await this.#call(() => this.#redis.hgetall(this.#keys.agents)), 'agent');
  }

  async putDocument(entry: CatalogueEntry, text: string, cap: number): Promise<PutDocumentResult> {
    const keys = [
      this.#keys.documents,
      this.#keys.version,
      this.#keys.documentChanges,
      this.#keys.documentFloor,
      this.#keys.texts,
    ];
    const result = await this.#call(() =>
      runScript(this.#redis, PUT_DOCUMENT, keys, [entry.hash, JSON.stringify(entry), text, cap]),
    );
    return result === 1 ? 'added' : result === 2 ? 'exists' : 'full';
  }

  async getDocument(hash: string): Promise<string | undefined> {
    return (await this.#call(() => this.#redis.hget(this.#keys.texts, hash))) ?? undefined;
  }

  async listDocuments(): Promise<CatalogueEntry[]> {
    return this.#parseAll(
      catalogueEntrySchema,
      await this.#call(() => this.#redis.hgetall(this.#keys.documents)),
      'document',
    );
  }

  async version(): Promise<number> {
    return Number((await this.#call(() => this.#redis.get(this.#keys.version))) ?? 0);
  }

  /**
   * The ids changed after `since` and the version they are good for, read in one transaction; undefined past the floor.
   */
  async #changedIds(
    since: number,
    changes: string,
    floor: string,
  ): Promise<{ version: number; ids: string[] } | undefined> {
    const replies = await this.#call(() =>
      this.#redis.multi().get(this.#keys.version).zrangebyscore(changes, `(${since}`, '+inf').get(floor).exec(),
    );
    const [version, ids, oldest] = (replies ?? []).map(([error, value]) => {
      if (error) throw error;
      return value;
    }) as [string | null, string[], string | null];
    if (since < Number(oldest ?? 0)) return undefined;
    return { version: Number(version ?? 0), ids };
  }

  async agentChanges(since: number): Promise<AgentChanges | undefined> {
    const found = await this.#changedIds(since, this.#keys.agentChanges, this.#keys.agentFloor);
    if (found === undefined) return undefined;
    const changes: AgentChanges = { version: found.version, changed: [], removed: [] };
    if (found.ids.length === 0) return changes;
    const raws = await this.#call(() => this.#redis.hmget(this.#keys.agents, ...found.ids));
    found.ids.forEach((id, index) => {
      const raw = raws[index];
      if (raw === null || raw === undefined) changes.removed.push(id);
      else {
        const record = this.#parse(agentRecordSchema, raw, `agent ${id}`);
        if (record !== undefined) changes.changed.push(record);
      }
    });
    return changes;
  }

  async documentChanges(since: number): Promise<DocumentChanges | undefined> {
    const found = await this.#changedIds(since, this.#keys.documentChanges, this.#keys.documentFloor);
    if (found === undefined) return undefined;
    if (found.ids.length === 0) return { version: found.version, added: [] };
    const raws = await this.#call(() => this.#redis.hmget(this.#keys.documents, ...found.ids));
    const added = found.ids.flatMap((hash, index) => {
      const entry = this.#parse(catalogueEntrySchema, raws[index], `document ${hash}`);
      return entry === undefined ? [] : [entry];
    });
    return { version: found.version, added };
  }

  async putRun(run: ChainRun): Promise<void> {
    await this.#call(() =>
      runScript(this.#redis, PUT_RUN, [this.#keys.runs, `${this.#keys.runs}:bytes`], [run.id, JSON.stringify(run)]),
    );
  }

  async getRun(id: string): Promise<ChainRun | undefined> {
    return this.#parse(chainRunSchema, await this.#call(() => this.#redis.hget(this.#keys.runs, id)), `run ${id}`);
  }

  async deleteRun(id: string): Promise<void> {
    await this.#call(() => runScript(this.#redis, DELETE_RUN, [this.#keys.runs, `${this.#keys.runs}:bytes`], [id]));
  }

  async runUsage(): Promise<{ count: number; bytes: number }> {
    const [count, bytes] = await this.#call(() =>
      Promise.all([this.#redis.hlen(this.#keys.runs), this.#redis.get(`${this.#keys.runs}:bytes`)]),
    );
    return { count, bytes: Math.max(0, Number(bytes ?? 0)) };
  }

  async clientAdds(client: string, add = false): Promise<number> {
    const key = this.#keys.clientAdds;
    const count = await this.#call<number | string | null>(() =>
      add ? this.#redis.hincrby(key, client, 1) : this.#redis.hget(key, client),
    );
    return Number(count ?? 0);
  }

  async listRuns(): Promise<ChainRun[]> {
    return this.#parseAll(chainRunSchema, await this.#call(() => this.#redis.hgetall(this.#keys.runs)), 'run');
  }

  async claim(key: string, owner: string, ttlMs: number): Promise<boolean> {
    return (
      (await this.#call(() =>
        runScript(this.#redis, CLAIM, [`${this.#keys.lease}${key}`], [owner, Math.max(1, Math.round(ttlMs))]),
      )) === 1
    );
  }

  async release(key: string, owner: string): Promise<void> {
    await this.#call(() => runScript(this.#redis, RELEASE, [`${this.#keys.lease}${key}`], [owner]));
  }

  async close(): Promise<void> {
    if (this.#owned) await quit(this.#redis);
  }
}
