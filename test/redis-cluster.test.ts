// Every Redis backend on a real Redis Cluster (3 masters, 3 replicas, started here): the store contracts, scripts
// that stay in one slot, durable writes, and a failover under load that loses no acknowledged turn.
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster, quit, type RedisClient } from '../src/_redis.js';
import { openRedis } from '../src/_redis-connection.js';
import { connectRedis, RedisConversationStore } from '../src/conversation/redis.js';
import type { ConversationRecord } from '../src/conversation/store.js';
import type { AgentRecord, ChainRun } from '../src/hub/records.js';
import { RedisHubStore } from '../src/hub/redis-store.js';
import { RedisRoomStore } from '../src/hub/rooms/redis-store.js';
import { RedisMemory } from '../src/memory/redis.js';
import {
  createClock,
  describeStoreContract,
  incrementTurn,
  sampleRecord,
  TTL_MS,
} from './conversation/store-contract.js';
import { describeMemoryContract } from './memory/memory-contract.js';
import { missingRedis, startCluster } from './helpers/redis-topology.js';
import { makeAgentFolder } from './helpers/agent-folder.js';
import { startHubCommand, startServe } from './helpers/cli.js';
import { COUNTER_PD, COUNTER_ROUTINE } from './bindings/mcp/_fixtures.js';
import { hashText } from '../src/protocol/document.js';

const missing = missingRedis();
const describeCluster = missing ? describe.skip : describe;
const title = missing ? `Redis Cluster (skipped: ${missing})` : 'Redis Cluster';

describeCluster(title, () => {
  let cluster: Awaited<ReturnType<typeof startCluster>>;
  let redis: RedisClient;
  const opened: RedisClient[] = [];
  const run = randomUUID();
  let sequence = 0;
  const freshPrefix = () => `agora-test:${run}:${(sequence += 1)}:`;
  const open = (query = '') => {
    const connection = openRedis(`${cluster.url}${query}`);
    opened.push(connection);
    return connection;
  };

  beforeAll(async () => {
    cluster = await startCluster();
    // The contracts test what is stored, not how fast replicas acknowledge: the longest WAIT a URL may ask for, so a
    // loaded machine's slow acknowledgement is not taken for a failure.
    redis = open('?waitMs=1500');
  }, 60_000);
  afterAll(async () => {
    await Promise.all(opened.map((connection) => quit(connection)));
    await cluster?.stop();
  }, 30_000);

  describeStoreContract(
    'RedisConversationStore on a cluster',
    (clock, { tombstoneMs }) =>
      new RedisConversationStore(redis, { prefix: freshPrefix(), now: clock.now, tombstoneMs }),
  );
  describeMemoryContract('RedisMemory on a cluster', () => new RedisMemory(redis, { prefix: freshPrefix() }));

  it('opens a cluster from its seed nodes and spreads conversations over its masters', async () => {
    const { store, redis: connection, ready, close } = connectRedis(cluster.url, { prefix: freshPrefix() });
    await ready();
    expect(connection).toBeInstanceOf(Cluster);
    const clock = createClock(Date.now());
    const ids = Array.from({ length: 30 }, (_, index) => `spread-${index}`);
    for (const id of ids) await store.create(sampleRecord(clock.now(), id));
    const slots = new Set(ids.map((id) => (connection as Cluster).slots[slotOf(id)]?.[0]));
    expect(slots.size).toBe(3);
    expect(await store.count()).toBe(30);
    await store.runTurn('spread-7', TTL_MS, (current) => incrementTurn(current));
    expect((await store.get('spread-7')).turn).toBe(2);
    expect(await store.delete('spread-7')).toBe(true);
    await close();
  });

  it('lists memory keys from every master', async () => {
    const memory = new RedisMemory(redis, { prefix: freshPrefix() });
    const keys = Array.from({ length: 40 }, (_, index) => `documents/d${String(index).padStart(2, '0')}`);
    for (const key of keys) await memory.set(key, true);
    expect(await memory.keys('documents/')).toEqual(keys);
  });

  it("keeps a hub's directory, catalogue, change log and runs, and its rooms, in one slot each", async () => {
    const prefix = freshPrefix();
    const first = new RedisHubStore(redis, { prefix });
    const second = new RedisHubStore(open(), { prefix });
    const record: AgentRecord = {
      ...{ id: 'weather', url: 'http://127.0.0.1:1/', name: 'weather', description: 'forecasts', kind: 'agora' },
      ...{
        protocols: [],
        capabilities: [],
        status: 'up',
        missedChecks: 0,
        registeredAt: 1,
        lastSeen: 1,
        lastChecked: 1,
      },
    };
    expect(await first.putAgent(record, 10)).toBe(true);
    const changes = await second.agentChanges(0);
    expect(changes?.changed.map((agent) => agent.id)).toEqual(['weather']);
    expect(await first.deleteAgent('weather')).toBe(true);
    expect((await second.agentChanges(changes!.version))?.removed).toEqual(['weather']);
    const entry = { hash: 'ab'.repeat(32), name: 'PD', description: 'a protocol', multiround: false, publishedAt: 1 };
    expect(await second.putDocument(entry, 'PD text', 10)).toBe('added');
    expect((await first.documentChanges(0))?.added.map((added) => added.hash)).toEqual([entry.hash]);
    const chain: ChainRun = {
      ...{ id: 'run-1', goal: 'g', status: 'running', hops: [], next: null, maxHops: 3, createdAt: 1, updatedAt: 1 },
      ...{ owner: 'me', leaseUntil: 1 },
    };
    await first.putRun(chain);
    expect((await second.runUsage()).count).toBe(1);
    await second.deleteRun('run-1');
    expect(await first.runUsage()).toEqual({ count: 0, bytes: 0 });
    expect(await first.claim('sweep', 'one', 1000)).toBe(true);
    expect(await second.claim('sweep', 'two', 1000)).toBe(false);

    const rooms = new RedisRoomStore({ url: redis, prefix });
    const room = { id: 'r1', state: 'active' } as never;
    expect(await rooms.put(room, 1)).toBe(true);
    expect(await rooms.put({ id: 'r2', state: 'active' } as never, 1)).toBe(false);
    await rooms.append('r1', 'message' as never, { text: 'hi' } as never);
    expect((await rooms.events('r1', 0)).map((event) => event.id)).toEqual([1]);
    expect(await rooms.openRooms()).toEqual(['r1']);
    await rooms.close();
  });

  it('answers 503 rather than a turn whose write fewer replicas hold than asked (WAIT)', async () => {
    const clock = createClock(Date.now());
    const durable = new RedisConversationStore(open('?waitReplicas=1'), { prefix: freshPrefix(), now: clock.now });
    const record = sampleRecord(clock.now());
    await durable.create(record);
    await durable.runTurn(record.id, TTL_MS, (current) => incrementTurn(current));
    // Each master has one replica: a write asked to reach two cannot be acknowledged.
    const greedy = new RedisConversationStore(open('?waitReplicas=2&waitMs=50'), { prefix: freshPrefix() });
    await expect(greedy.create(sampleRecord(clock.now()))).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
  });

  it('serves two agents and a hub on the cluster: a conversation alternates between the agents turn by turn', async () => {
    const folder = await makeAgentFolder({
      'protocols/counter.md': COUNTER_PD,
      'routines/counter.ts': COUNTER_ROUTINE,
    });
    const store = `${cluster.url}?prefix=${encodeURIComponent(freshPrefix())}`;
    const env = { ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: '', OPENAI_API_KEY: '' };
    const started = await Promise.all([
      startServe([folder.dir, '--port', '0', '--store', store], { env }),
      startServe([folder.dir, '--port', '0', '--store', store], { env }),
      startHubCommand(['--store', store]),
    ]);
    try {
      const [first, second, hub] = started;
      const post = async (url: string, body: unknown) =>
        (await (
          await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
          })
        ).json()) as { body?: { count: number; pid: number }; conversationId?: string };
      const opened = await post(`${first.url}/`, {
        protocolHash: hashText(COUNTER_PD),
        multiround: true,
        body: { add: 1 },
      });
      const pids = new Set<number>();
      for (let index = 2; index <= 10; index += 1) {
        const agent = index % 2 === 0 ? second : first;
        const reply = await post(`${agent.url}/conversations/${opened.conversationId}`, { body: { add: 1 } });
        expect(reply.body?.count).toBe(index);
        pids.add(reply.body!.pid);
      }
      expect(pids.size).toBe(2);
      expect((await fetch(`${hub.url}/agents`)).status).toBe(200);
    } finally {
      await Promise.all(started.map((command) => command.stop('SIGKILL')));
      await folder.cleanup();
    }
  }, 60_000);

  it('loses no acknowledged turn of 1,000 alternating between two agents while a master is SIGKILLed', async () => {
    const prefix = freshPrefix();
    // Two agents' processes: each its own cluster connection, turns waiting for one replica (the default).
    const options = { prefix, lockTtlMs: 2000, lockWaitMs: 3000 };
    const agents = [new RedisConversationStore(open(), options), new RedisConversationStore(open(), options)];
    const conversations = Array.from({ length: 16 }, (_, index) => `failover-${index}`);
    for (const id of conversations) await agents[0]!.create({ ...sampleRecord(Date.now(), id), history: [] });
    const acknowledged = new Map<string, string[]>(conversations.map((id) => [id, []]));
    const victim = (redis as Cluster).slots[slotOf(conversations[0]!)]![0]!;
    const figures = { turns: 0, failed: 0, slowestMs: 0, killedAt: 0, firstAfterKill: 0 };
    let killed: Promise<void> | undefined;
    const target = 1000;
    const turn = async (id: string, agent: RedisConversationStore, body: string) => {
      const started = performance.now();
      try {
        await agent.runTurn(id, TTL_MS, async (record: ConversationRecord) => ({
          result: undefined,
          state: record.state,
          history: [...record.history, { role: 'peer', body }],
        }));
        acknowledged.get(id)!.push(body);
        figures.turns += 1;
        if (killed && !figures.firstAfterKill) figures.firstAfterKill = performance.now() - figures.killedAt;
      } catch (error) {
        expect((error as { code?: string }).code).toMatch(/STORE_UNAVAILABLE|REQUEST_TIMEOUT|INTERNAL/);
        figures.failed += 1;
        await delay(50);
      } finally {
        figures.slowestMs = Math.max(figures.slowestMs, performance.now() - started);
      }
    };
    // Each conversation is driven by a loop of its own, its turns alternating between the two agents.
    await Promise.all(
      conversations.map(async (id) => {
        for (let attempt = 0; figures.turns < target; attempt += 1) {
          if (figures.turns >= target / 2 && !killed) {
            figures.killedAt = performance.now();
            killed = cluster.kill(Number(victim.split(':')[1]));
          }
          await turn(id, agents[attempt % 2]!, `${id}#${attempt}`);
        }
      }),
    );
    await killed;
    await cluster.recovered();
    // The promoted replica has no replica of its own until the killed node comes back as one: till then its
    // conversations are refused (a write no replica holds is not answered), then they go on.
    const victimPort = Number(victim.split(':')[1]);
    await expect(
      agents[0]!.runTurn(conversations[0]!, TTL_MS, (current) => incrementTurn(current)),
    ).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
    });
    await cluster.restart(victimPort);
    await turn(conversations[0]!, agents[1]!, 'after-restart');
    expect(acknowledged.get(conversations[0]!)!.at(-1)).toBe('after-restart');
    const reader = new RedisConversationStore(open(), { prefix });
    let lost = 0;
    for (const id of conversations) {
      const kept = new Set((await reader.get(id)).history.map((message) => message.body as string));
      lost += acknowledged.get(id)!.filter((body) => !kept.has(body)).length;
    }
    console.info(
      `failover: ${figures.turns} acknowledged turns, ${figures.failed} refused during the failover, ${lost} lost; ` +
        `slowest request ${Math.round(figures.slowestMs)} ms; first turn answered ${Math.round(figures.firstAfterKill)} ms after the kill`,
    );
    expect(figures.turns).toBeGreaterThanOrEqual(target);
    expect(lost).toBe(0);
    // The bound of one turn: the lock's wait (3 s) and the command timeouts of its reads and write (2 s each).
    expect(figures.slowestMs).toBeLessThan(3000 + 3 * 2000);
  }, 90_000);
});

// The cluster slot of a conversation's keys: CRC16 of the hash tag (its id), as Redis computes it.
function slotOf(id: string): number {
  let crc = 0;
  for (const byte of Buffer.from(id)) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}
