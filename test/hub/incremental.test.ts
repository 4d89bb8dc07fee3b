import { describe, expect, it } from 'vitest';
import { Hub } from '../../src/hub/hub.js';
import { hubMount } from '../../src/hub/http.js';
import { compose } from '../../src/edge/mount.js';
import { listen } from '../../src/edge/node.js';
import { silentLogger } from '../../src/log.js';
import { hashText, parseDocument } from '../../src/protocol/document.js';
import type { AgentRecord } from '../../src/hub/records.js';
import { RedisHubStore } from '../../src/hub/redis-store.js';
import { CHANGES_KEPT, MemoryHubStore, type HubStore } from '../../src/hub/store.js';
import { useTestRedis } from '../helpers/redis.js';
import { document } from './_agents.js';

function record(id: string, name: string, words: string, status: 'up' | 'down' = 'up'): AgentRecord {
  return {
    id,
    url: `http://127.0.0.1:1/${id}`,
    name,
    description: words,
    kind: 'agora',
    protocols: [],
    capabilities: [],
    status,
    missedChecks: 0,
    registeredAt: 1,
    lastSeen: 1,
    lastChecked: 1,
  };
}

/** A store whose full reads are counted: a change must reach the other process without one. */
function counted(store: HubStore) {
  const reads = { agents: 0, documents: 0 };
  const listAgents = store.listAgents.bind(store);
  const listDocuments = store.listDocuments.bind(store);
  store.listAgents = () => ((reads.agents += 1), listAgents());
  store.listDocuments = () => ((reads.documents += 1), listDocuments());
  return reads;
}

/** The contract, on one store kind: `open` gives two stores on the same state, as two hub processes would have. */
function contract(kind: string, open: () => { first: HubStore; second: HubStore }) {
  describe(`hub processes sharing a ${kind} store`, () => {
    it("see each other's registrations, changes and removals by the record, without reading the whole directory again", async () => {
      const { first, second } = open();
      const a = new Hub({ store: first, logger: silentLogger });
      const b = new Hub({ store: second, logger: silentLogger });
      const reads = counted(second);
      for (let index = 0; index < 20; index++)
        await a.directory.put(record(`id${index}`, `agent ${index}`, 'sells shoes'));
      await b.directory.refresh();
      expect(reads.agents).toBe(1);

      await a.directory.put(record('weather', 'Meteo', 'weather forecast for a city'));
      await a.directory.put(record('id3', 'agent 3', 'repairs bicycles'));
      await a.directory.remove('id4');
      const decision = await b.route('the weather forecast in Paris');
      expect(decision).toMatchObject({ agent: { id: 'weather' } });
      expect((await b.agents({ q: 'bicycles' })).map((hit) => hit.id)).toEqual(['id3']);
      expect(await b.agents({ q: 'shoes', limit: 100 })).toHaveLength(18);
      expect(b.directory.counts).toEqual({ up: 20, down: 0 });
      // Its own write is applied too, and the other's catalogue additions reach it the same way.
      await b.directory.put(record('id5', 'agent 5', 'sells shoes', 'down'));
      expect(b.directory.counts).toEqual({ up: 19, down: 1 });
      const text = document('Forecast', 'Weather forecasts for a city.');
      await b.catalogue.search(undefined);
      await a.catalogue.add(parseDocument(text, 'test'));
      expect((await b.catalogue.search('forecast')).map((hit) => hit.hash)).toEqual([hashText(text)]);
      expect(reads).toEqual({ agents: 1, documents: 1 });
      await a.close();
      await b.close();
    });
  });
}

contract('memory', () => {
  const store = new MemoryHubStore();
  return { first: store, second: store };
});

describe("the memory store's record of changes", () => {
  it('names each changed record once, and says when it no longer reaches back far enough', async () => {
    const store = new MemoryHubStore();
    await store.putAgent(record('a', 'A', 'one'), 10);
    await store.putAgent(record('b', 'B', 'two'), 10);
    await store.putAgent(record('a', 'A', 'three'), 10);
    await store.deleteAgent('b');
    expect(await store.agentChanges(1)).toEqual({
      version: 4,
      changed: [expect.objectContaining({ id: 'a', description: 'three' })],
      removed: ['b'],
    });
    expect(await store.agentChanges(4)).toEqual({ version: 4, changed: [], removed: [] });
    for (let index = 0; index < 2 * CHANGES_KEPT; index++) await store.putAgent(record('a', 'A', `${index}`), 10);
    expect(await store.agentChanges(1)).toBeUndefined();
    expect((await store.agentChanges((await store.version()) - 1))?.changed).toHaveLength(1);
  });
});

const redisUrl = process.env.AGORA_TEST_REDIS_URL;
const describeRedis = redisUrl ? describe : describe.skip;
describeRedis('on Redis', () => {
  const redis = useTestRedis(redisUrl ?? 'redis://127.0.0.1:1');
  contract('Redis', () => {
    const prefix = redis.freshPrefix();
    return {
      first: new RedisHubStore(redis.connect(), { prefix }),
      second: new RedisHubStore(redis.connect(), { prefix }),
    };
  });

  it('reads everything again when the store lost its record of changes (the floor passed the version held)', async () => {
    const prefix = redis.freshPrefix();
    const a = new Hub({ store: new RedisHubStore(redis.connect(), { prefix }), logger: silentLogger });
    const second = new RedisHubStore(redis.connect(), { prefix });
    const reads = counted(second);
    const b = new Hub({ store: second, logger: silentLogger });
    await a.directory.put(record('one', 'One', 'first'));
    await b.directory.refresh();
    await a.directory.put(record('two', 'Two', 'second'));
    await redis.shared.set(`${prefix}{${prefix}hub}changes:agents:floor`, '1000');
    expect((await b.agents()).map((hit) => hit.id)).toEqual(['one', 'two']);
    expect(reads.agents).toBe(2);
    await a.close();
    await b.close();
  });
});

describe('hub listings', () => {
  it('pages /agents and /protocols with their totals, by name, and refuses a bad offset', async () => {
    const hub = new Hub({ logger: silentLogger });
    for (const name of ['delta', 'alpha', 'echo', 'charlie', 'bravo'])
      await hub.directory.put(record(name, name, `the ${name} agent`, name === 'echo' ? 'down' : 'up'));
    for (const name of ['Zulu', 'Yankee', 'Xray'])
      await hub.catalogue.add(parseDocument(document(name, `${name} things.`), name));
    const running = await listen(compose([hubMount(hub)], { logger: silentLogger }), {
      port: 0,
      host: '127.0.0.1',
      logger: silentLogger,
    });
    try {
      const get = async (path: string) => {
        const response = await fetch(`${running.url}${path}`);
        return {
          status: response.status,
          body: (await response.json()) as Record<string, unknown> & {
            agents?: { name: string }[];
            protocols?: { name: string }[];
          },
        };
      };
      const second = await get('/agents?limit=2&offset=2');
      expect(second.body.agents!.map((agent) => agent.name)).toEqual(['charlie', 'delta']);
      expect(second.body).toMatchObject({ total: 5, offset: 2, limit: 2 });
      const up = await get('/agents?status=up&limit=10&offset=3');
      expect(up.body.agents!.map((agent) => agent.name)).toEqual(['delta']);
      expect(up.body.total).toBe(4);
      const protocols = await get('/protocols?limit=2&offset=1');
      expect(protocols.body.protocols!.map((entry) => entry.name)).toEqual(['Yankee', 'Zulu']);
      expect(protocols.body).toMatchObject({ total: 3, offset: 1, limit: 2 });
      // A word search ranks: no total.
      expect((await get('/agents?q=charlie')).body).toEqual({ agents: [expect.objectContaining({ name: 'charlie' })] });
      expect(await get('/agents?offset=-1')).toMatchObject({
        status: 400,
        body: { error: 'offset must be a non-negative integer' },
      });
    } finally {
      await running.close();
      await hub.close();
    }
  });
});

describeRedis('the catalogue quota on Redis', () => {
  const redis = useTestRedis(redisUrl ?? 'redis://127.0.0.1:1');

  it('is one quota per client for every hub process sharing the store', async () => {
    const prefix = redis.freshPrefix();
    const first = new Hub({
      store: new RedisHubStore(redis.connect(), { prefix }),
      logger: silentLogger,
      maxDocumentsPerClient: 2,
    });
    const second = new Hub({
      store: new RedisHubStore(redis.connect(), { prefix }),
      logger: silentLogger,
      maxDocumentsPerClient: 2,
    });
    const publish = (hub: Hub, index: number) => {
      const text = document(`Quota ${index}`, `document ${index}`);
      return hub.catalogue.publish(hashText(text), text, '203.0.113.9');
    };
    await publish(first, 1);
    await publish(second, 2);
    await expect(publish(first, 3)).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    await expect(publish(second, 3)).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    // Another client has its own quota.
    const text = document('Quota 4', 'document 4');
    await expect(second.catalogue.publish(hashText(text), text, '203.0.113.10')).resolves.toMatchObject({
      name: 'Quota 4',
    });
  });
});
