// src/sender/tasks.ts (with task-llm.ts and task-state.ts): typed tasks.
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { AnthropicModel } from '../../src/llm/anthropic/model.js';
import type { SenderOptions } from '../../src/sender/sender.js';
import { rankForTask } from '../../src/sender/task-protocol.js';
import type { TaskServedEvent } from '../../src/sender/tasks.js';
import { parseDocument } from '../../src/protocol/document.js';
import { FakeAnthropic } from '../../src/testing/fake-anthropic.js';
import { DISTANCE, DISTANCE_HEX, failureOf, km, senderBrain, senderSuite } from '../helpers/sender.js';

const { cleanup, sender, peers } = senderSuite({ routinesOnly: true });

describe('typed tasks', () => {
  const Convert = {
    name: 'Convert miles',
    description: 'Convert a distance in miles to kilometres.',
    input: z.object({ miles: z.number() }),
    output: z.object({ km: z.number() }),
  };

  async function senderAgent(options: SenderOptions = {}) {
    const fake = await FakeAnthropic.start({ fallback: senderBrain });
    cleanup.push(() => fake.close());
    const dir = await cleanup.tempDir('agora-sender-');
    const make = (extra: SenderOptions = {}) =>
      sender({
        llm: new AnthropicModel({ baseURL: fake.url, apiKey: 'test', maxRetries: 0 }),
        dir,
        thresholds: { lookForProtocolFrom: 2, negotiateFrom: 3 },
        ...options,
        ...extra,
      });
    return { fake, dir, make };
  }

  const steps = (fake: FakeAnthropic) =>
    fake.requests.map((request) =>
      request.system.includes('natural language')
        ? 'write-nl'
        : request.system.includes('You decide')
          ? 'judge'
          : request.system.includes('Write the body')
            ? 'write-body'
            : 'read',
    );

  it('goes from natural language to a fitting protocol, and keeps its counters across a restart', async () => {
    const { fake, make } = await senderAgent();
    const usage: number[] = [];
    const first = make({ onUsage: (call) => usage.push(call.inputTokens) });
    const convert = first.task(Convert);

    expect(await convert({ miles: 5 }, { target: peers.agent.url })).toEqual({ km: 8.047 });
    expect(steps(fake)).toEqual(['write-nl', 'read']);
    expect(fake.requests[0]!.lastUserText).toContain('Input (JSON): {"miles":5}');

    fake.reset();
    expect(await convert({ miles: 10 }, { target: peers.agent.url })).toEqual({ km: 16.093 });
    expect(steps(fake)).toEqual(['judge', 'write-body', 'read']);
    expect(fake.requests[0]!.lastUserText).toContain(DISTANCE.trim());
    expect(first.usage()).toEqual({ llmCalls: 5, inputTokens: 50, outputTokens: 25 });
    expect(usage).toHaveLength(5);

    const state = await first.taskState('Convert miles', peers.agent.url);
    expect(state).toEqual({ uses: 2, protocolHash: DISTANCE_HEX, verdicts: { [DISTANCE_HEX]: true } });

    // A new sender on the same folder: the third use goes straight to the protocol, no judging again.
    fake.reset();
    const restarted = make();
    expect(await restarted.task(Convert)({ miles: 1 }, { target: `${peers.agent.url}/` })).toEqual({ km: 1.609 });
    expect(steps(fake)).toEqual(['write-body', 'read']);
    expect((await restarted.taskState('Convert miles', peers.agent.url)).uses).toBe(3);
  });

  it('uses a protocol judged fit with one target from its first use with another that lists it, judging it no more', async () => {
    const { fake, make } = await senderAgent();
    const convert = make().task(Convert);
    await convert({ miles: 5 }, { target: peers.agent.url });
    await convert({ miles: 10 }, { target: peers.agent.url });
    expect(steps(fake)).toEqual(['write-nl', 'read', 'judge', 'write-body', 'read']);

    // The routines-only peer takes no natural language: the first use must already be under the protocol.
    fake.reset();
    expect(await convert({ miles: 2 }, { target: peers.routinesOnly.url })).toEqual({ km: km(2) });
    expect(steps(fake)).toEqual(['write-body', 'read']);
    const state = await make().taskState('Convert miles', peers.routinesOnly.url);
    expect(state).toEqual({ uses: 1, protocolHash: DISTANCE_HEX, verdicts: { [DISTANCE_HEX]: true } });
  });

  it('judges the candidates that share the most words with the task first, and those judged fit before all', () => {
    const doc = (name: string, description: string) =>
      parseDocument(`---\nname: ${name}\ndescription: ${description}\nmultiround: false\n---\n\nJSON.\n`);
    const weather = doc('Weather forecast', 'The forecast for a city on a date.');
    const temperature = doc('Temperature', 'The temperature in a city.');
    const distance = doc('Distance conversion', 'Convert a distance in miles to kilometres.');
    const listed = [weather, temperature, distance];
    expect(rankForTask(listed, Convert, {})).toEqual([distance, weather, temperature]);
    const task = { name: 'temperature_check', description: 'The temperature in a city on a date.' };
    expect(rankForTask(listed, task, {})).toEqual([temperature, weather, distance]);
    expect(rankForTask(listed, task, { [distance.hash]: true })).toEqual([distance, temperature, weather]);
  });

  it('uses a sender routine when an extension supplies one, and reports every call', async () => {
    const events: TaskServedEvent[] = [];
    const { fake, make } = await senderAgent({
      thresholds: { lookForProtocolFrom: 1, negotiateFrom: 5 },
      extensions: {
        taskRoutine: async (task, document) =>
          document.hash === DISTANCE_HEX && task.name === 'Convert miles'
            ? { buildBody: (input) => ({ miles: (input as { miles: number }).miles }), parseReply: (body) => body }
            : undefined,
        served: (event) => void events.push(event),
      },
    });
    const convert = make().task(Convert);
    expect(await convert({ miles: 2 }, { target: peers.agent.url })).toEqual({ km: 3.219 });
    expect(await convert({ miles: 3 }, { target: peers.agent.url })).toEqual({ km: 4.828 });
    expect(steps(fake)).toEqual(['judge']);
    await vi.waitFor(() => expect(events).toHaveLength(2));
    expect(events[1]).toEqual({
      task: 'Convert miles',
      target: peers.agent.url,
      hash: DISTANCE_HEX,
      input: { miles: 3 },
      body: { miles: 3 },
      reply: { km: 4.828 },
      output: { km: 4.828 },
      llmCalls: 0,
    });
    expect(events[0]!.llmCalls).toBe(1);
  });

  it('falls back to the LLM when the sender routine throws', async () => {
    const { fake, make } = await senderAgent({
      thresholds: { lookForProtocolFrom: 1, negotiateFrom: 5 },
      extensions: {
        taskRoutine: async () => ({
          buildBody: () => {
            throw new Error('bug');
          },
          parseReply: () => ({ kilometres: 1 }),
        }),
      },
    });
    expect(await make().task(Convert)({ miles: 5 }, { target: peers.agent.url })).toEqual({ km: 8.047 });
    expect(steps(fake)).toEqual(['judge', 'write-body', 'read']);
  });

  it('gives up with INVALID_OUTPUT when the reply cannot be read after one repair', async () => {
    const { fake, make } = await senderAgent();
    fake.setFallback((request) =>
      request.system.includes('turn its reply') ? 'It is about eight kilometres.' : senderBrain(request),
    );
    const error = await failureOf(make().task(Convert)({ miles: 5 }, { target: peers.agent.url }));
    expect(error.code).toBe('INVALID_OUTPUT');
    expect(error.message).toMatch(
      /^task "Convert miles": the reply could not be turned into the task's output: not JSON/,
    );
    expect(steps(fake)).toEqual(['write-nl', 'read', 'read']);
    expect(fake.requests[2]!.lastUserText).toMatch(/^Your reply is not usable: not JSON/);
  });

  it('refuses an input that does not match the task', async () => {
    const { make } = await senderAgent();
    const error = await failureOf(make().task(Convert)({ miles: 'five' } as never, { target: peers.agent.url }));
    expect(error.code).toBe('BAD_REQUEST');
    expect(error.message).toContain('task "Convert miles": invalid input');
  });
});
