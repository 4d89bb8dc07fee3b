// The network run of `npm run bench:cost`: a hub, and several pairs (a user agent and its own weather service
// agent, each with its own fake LLM) on the same task, one pair after another. The first pair negotiates its
// protocol and publishes it to the hub; the next pairs' users find it there when they first look for a protocol
// (query 6), so they negotiate nothing. Negotiation calls are counted from the fake APIs' own request logs (the
// prompts' markers), on both sides of each pair, so a hidden negotiation could not go uncounted.
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type { z } from 'zod';
import { startAgent } from '../src/agent.js';
import { startHub } from '../src/hub/server.js';
import { AnthropicModel } from '../src/llm/anthropic/model.js';
import type { Logger } from '../src/log.js';
import { silentLogger } from '../src/log.js';
import { FakeAnthropic } from '../src/testing/fake-anthropic.js';
import { agentCost, pathOf, routineAnswers, startAssistant, temporaryCopy } from '../examples/_shared.js';
import { brain, PROMPT_MARKERS } from '../examples/weather/brain.js';
import { forecast, weatherQuery } from '../examples/weather/data.js';
import { formatNumber, table } from './_harness.js';

type Task = {
  name: string;
  description: string;
  input: z.ZodType<{ city: string; date: string }>;
  output: z.ZodType<{ weather: string; precipitation: number }>;
};

/** What the network run prints, and what it found wrong. */
export type NetworkRun = { markdown: string; mismatches: string[]; secondPairNegotiationCalls: number };

const negotiating = (system: string) =>
  system.includes(PROMPT_MARKERS.proposeProtocol) || system.includes(PROMPT_MARKERS.answerNegotiation);

/** Runs `pairs` user/service pairs of `queries` task calls each, one pair after the other, all with one hub. */
export async function runNetwork(
  task: Task,
  options: { pairs: number; queries: number; logger: Logger; progress: (line: string) => void },
): Promise<NetworkRun> {
  const { pairs, queries, logger, progress } = options;
  const folder = await temporaryCopy('agora-bench-network-', {
    'data.ts': 'weather/data.ts',
    ...Object.fromEntries(
      Array.from({ length: pairs }, (_, index) => [`service${index + 1}/tools`, 'weather/agent/tools']),
    ),
  });
  const hub = await startHub({ port: 0, host: '127.0.0.1', tickMs: 0, logger: silentLogger, rooms: false });
  const rows: (string | number)[][] = [];
  const mismatches: string[] = [];
  const negotiationCalls: number[] = [];
  try {
    for (let pair = 1; pair <= pairs; pair++) {
      progress(`  (c) pair ${pair}/${pairs}: ${queries} queries`);
      const fakes = {
        service: await FakeAnthropic.start({ fallback: brain, tokenModel: 'chars' }),
        user: await FakeAnthropic.start({ fallback: brain, tokenModel: 'chars' }),
      };
      const model = (fake: FakeAnthropic) =>
        new AnthropicModel({ baseURL: fake.url, apiKey: 'fake', maxRetries: 0, model: 'fake-brain' });
      const service = await startAgent({
        dir: join(folder.dir, `service${pair}`),
        name: `weather-${pair}`,
        description: 'Weather forecasts for cities.',
        port: 0,
        host: '127.0.0.1',
        llm: model(fakes.service),
        routineThreshold: 5,
        autoApprove: true,
        watch: false,
        logger,
      });
      const user = await startAssistant({
        dir: join(folder.dir, `user${pair}`),
        llm: model(fakes.user),
        logger,
        threshold: 5,
        hub: hub.url,
      });
      try {
        const run = user.sender.task(task);
        let firstProtocol = 0;
        let firstFree = 0;
        for (let index = 1; index <= queries; index++) {
          const input = weatherQuery(index - 1 + pair * 7);
          const before = {
            calls: fakes.service.totals().calls + fakes.user.totals().calls,
            routines: routineAnswers(service),
          };
          const output = await run(input, { target: service.url });
          await Promise.all([service.generator?.idle(), user.idle()]);
          const path = pathOf(user.last, routineAnswers(service) > before.routines);
          if (path !== 'NL' && firstProtocol === 0) firstProtocol = index;
          if (
            path === 'routines' &&
            firstFree === 0 &&
            fakes.service.totals().calls + fakes.user.totals().calls === before.calls
          )
            firstFree = index;
          const expected = forecast(input.city, input.date);
          if (!isDeepStrictEqual(output, expected))
            mismatches.push(
              `(c) pair ${pair} query ${index}: ${JSON.stringify(input)} → ${JSON.stringify(output)}, expected ${JSON.stringify(expected)}`,
            );
        }
        const state = await user.sender.taskState(task.name, service.url);
        const negotiations = [...fakes.service.requests, ...fakes.user.requests].filter((request) =>
          negotiating(request.system),
        ).length;
        negotiationCalls.push(negotiations);
        const how =
          state.negotiation?.outcome === 'agreed'
            ? `negotiated in ${state.negotiation.rounds} round(s), published`
            : state.protocolHash
              ? 'found at the hub'
              : 'none';
        const spent = {
          calls: fakes.service.totals().calls + fakes.user.totals().calls,
          tokens: [fakes.service.totals(), fakes.user.totals()].reduce(
            (sum, totals) => sum + totals.inputTokens + totals.outputTokens,
            0,
          ),
        };
        const metered = agentCost(service).calls + user.cost().calls;
        if (metered !== spent.calls)
          mismatches.push(
            `(c) pair ${pair}: the agents metered ${metered} LLM calls, the fake APIs billed ${spent.calls}`,
          );
        rows.push([
          `${pair}`,
          state.protocolHash ? state.protocolHash.slice(0, 12) : '—',
          how,
          `**${negotiations}**`,
          firstProtocol || '—',
          firstFree || '—',
          formatNumber(spent.calls),
          formatNumber(spent.tokens),
        ]);
      } finally {
        await user.close();
        await service.close();
        await fakes.service.close();
        await fakes.user.close();
      }
    }
    const listed = await hub.hub.protocols();
    const markdown = [
      `### (c) A network: ${pairs} user agents and ${pairs} weather agents with a hub, ${queries} task calls per pair, one pair after another`,
      '',
      'Each pair has its own agents, folders and fake LLMs; they share only the hub. "Negotiation calls" are LLM calls made with the negotiation prompts on either side, counted from the fake APIs\' request logs.',
      '',
      table(
        [
          'pair',
          'protocol (sha1)',
          'how the user got it',
          'negotiation calls',
          'first query under it',
          'first query with no LLM call',
          'LLM calls',
          'tokens',
        ],
        rows,
      ),
      '',
      `- documents in the hub's database at the end: ${listed.length} (${listed.map((entry) => `"${entry.name}"`).join(', ')})`,
      `- pairs after the first paid **${negotiationCalls.slice(1).reduce((sum, count) => sum + count, 0)}** negotiation calls (target 0)`,
    ].join('\n');
    return { markdown, mismatches, secondPairNegotiationCalls: negotiationCalls[1] ?? 0 };
  } finally {
    await hub.close();
    await folder.remove();
  }
}
