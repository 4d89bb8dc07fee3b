// `agora hub` as a process on Redis: it registers an a2a-js agent and a ROAR agent, routes goals to them by their
// skills and capabilities, and a four-hop chain Agora → OAP → ROAR → A2A completes after the hub is killed mid-chain.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { HubClient } from '../../src/hub/client.js';
import { startA2aServer } from '../helpers/a2a-server.js';
import { runCli, startHubCommand } from '../helpers/cli.js';
import { startOapPlanner } from '../helpers/oap-agent.js';
import { oapTaskEnvelopeSent } from '../helpers/oap-schema.js';
import { startRoarServer } from '../helpers/roar-server.js';
import { startLoopbackAgent } from './_agents.js';

const redisUrl = process.env.AGORA_TEST_REDIS_URL;
const describeRedis = redisUrl ? describe : describe.skip;

describeRedis('a hub process speaking Agora, OAP, ROAR and A2A', () => {
  const prefix = `agora-test-peers:${randomUUID()}:`;
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    const redis = new Redis(redisUrl ?? '');
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    await redis.quit();
  });

  it(
    'routes to an a2a-js and a ROAR agent by skill and capability; a four-hop chain resumes after a SIGKILL of the hub',
    { timeout: 120_000 },
    async () => {
      const store = `${redisUrl}?prefix=${encodeURIComponent(prefix)}`;
      let hub = await startHubCommand(['--store', store, '--allow-private-agents']);
      cleanups.push(async () => void hub.child.kill('SIGKILL'));

      const scout = await startLoopbackAgent({ 'Scout destinations': 'Finds destinations for a trip.' }, () => ({
        destinations: ['Lyon'],
        handoff: { next_agent: 'planner' },
      }));
      const planner = await startOapPlanner((envelope) => ({
        body: {
          ...envelope,
          result: { plan: ['Lyon', 'Paris'] },
          handoff: { next_agent: 'reviewer', reason: 'a plan is checked before it is sent' },
        },
      }));
      const { envelopes } = planner;
      // The hub dies while the ROAR hop is in flight: that hop answers, but its checkpoint cannot be written.
      let killed = false;
      const reviewer = await startRoarServer({
        name: 'reviewer',
        description: 'Reviews plans and code, on the ROAR network.',
        capabilities: ['plan-review', 'code-review'],
        // It takes only messages signed with its secret: the chain signs with AGORA_ROAR_SECRET.
        secret: 'roar-network-secret',
        answer: async () => {
          if (!killed) {
            killed = true;
            await hub.stop('SIGKILL');
          }
          return {
            verdict: 'the plan holds',
            handoff: { next_agent: 'translator', reason: 'the client reads French' },
          };
        },
      });
      const translator = await startA2aServer({
        name: 'translator',
        description: 'Translates text, on the A2A network.',
        skills: [
          { name: 'Translate', description: 'Translates English text to French', tags: ['translation', 'french'] },
        ],
        answer: (input) => `traduit: ${input.split('\n')[0]}`,
      });
      cleanups.push(scout.close, planner.close, reviewer.close, translator.close);

      const client = new HubClient({ url: hub.url });
      await client.register(scout.url, { name: 'scout' });
      expect(await client.register(planner.url)).toMatchObject({ name: 'planner', kind: 'oap' });
      expect(await client.register(reviewer.url)).toMatchObject({
        name: 'reviewer',
        kind: 'roar',
        capabilities: ['plan-review', 'code-review'],
      });
      expect(await client.register(translator.url)).toMatchObject({
        name: 'translator',
        kind: 'a2a',
        capabilities: ['Translate', 'translation', 'french'],
      });

      const byCapability = await runCli(['route', 'a code-review of my patch', '--hub', hub.url, '--json']);
      expect(JSON.parse(byCapability.stdout)).toMatchObject({
        agent: { name: 'reviewer', kind: 'roar' },
        by: 'keyword',
      });
      const bySkill = await runCli(['route', 'a french translation of the menu', '--hub', hub.url, '--json']);
      expect(JSON.parse(bySkill.stdout)).toMatchObject({ agent: { name: 'translator', kind: 'a2a' }, by: 'keyword' });

      const env = { ...process.env, AGORA_ROAR_SECRET: 'roar-network-secret' };
      const chain = await runCli(
        ['chain', 'scout destinations for a trip', '--hub', hub.url, '--allow-private-agents'],
        { env },
      );
      expect(chain.code).toBe(1);
      expect(chain.stderr).toMatch(/the checkpoint could not be written/);
      const id = /chain ([\w-]{36})/.exec(chain.stderr)![1]!;

      // A new hub process on the same store lost nothing: the chain resumes at the ROAR hop.
      hub = await startHubCommand(['--store', store, '--allow-private-agents']);
      expect((await runCli(['runs', '--hub', hub.url])).stdout).toContain(`${id}  running  2 hops `);
      const resumed = await runCli(['resume', id, '--hub', hub.url, '--json', '--allow-private-agents'], { env });
      expect(resumed.code, resumed.stderr).toBe(0);
      const run = JSON.parse(resumed.stdout) as {
        status: string;
        hops: { agentName: string; ok: boolean; result: unknown }[];
      };
      expect(run.status).toBe('done');
      expect(run.hops.map((hop) => [hop.agentName, hop.ok])).toEqual([
        ['scout', true],
        ['planner', true],
        ['reviewer', true],
        ['translator', true],
      ]);
      expect(run.hops[1]!.result).toEqual({ plan: ['Lyon', 'Paris'] });
      expect(run.hops[2]!.result).toMatchObject({ verdict: 'the plan holds' });
      expect(run.hops[3]!.result).toBe('traduit: scout destinations for a trip');
      expect(oapTaskEnvelopeSent.parse(envelopes[0])).toMatchObject({
        id,
        steps_taken: [{ agent_id: 'scout', action: 'handed off', result: { destinations: ['Lyon'] } }],
        memory: { last_result: { destinations: ['Lyon'] } },
      });
      // Finished hops ran once; the hop in flight at the crash ran again, as it may.
      expect(scout.calls).toHaveLength(1);
      expect(envelopes).toHaveLength(1);
      expect(reviewer.received).toHaveLength(2);
      expect(translator.received).toHaveLength(1);
    },
  );
});
