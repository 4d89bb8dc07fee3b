import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgoraError } from '../../src/errors.js';
import { converse } from '../../src/llm/tool-loop.js';
import { hashText } from '../../src/protocol/document.js';
import { FakeAnthropic, scriptedModel, startTestAgent, type TestAgent } from '../../src/testing/index.js';
import { defineTool } from '../../src/tool/define.js';

const ECHO =
  '---\nname: Echo\ndescription: Echo a value.\nmultiround: true\n---\nThe sender sends JSON {"value": string}. The receiver replies the same JSON.\n';
const ECHO_ROUTINE =
  'export default (body: unknown, context: { conversation: { turn: number } }) => ({ ...(body as object), turn: context.conversation.turn });\n';

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function agentFolder(files: Record<string, string> = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'agora-testing-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
  return dir;
}

function track(agent: TestAgent): TestAgent {
  cleanups.push(() => agent.close());
  return agent;
}

async function reachable(url: string): Promise<boolean> {
  return fetch(`${url}/v1/messages`, { method: 'POST', body: '{}' }).then(
    () => true,
    () => false,
  );
}

describe('startTestAgent', () => {
  it('serves the agent on loopback, its LLM the real SDK against a fake it starts and closes', async () => {
    const dir = await agentFolder();
    const agent = await startTestAgent({ dir, name: 'helper', fake: { replies: ['Hello!'] } });

    expect(agent.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await agent.query('Hi')).toEqual({ status: 'success', body: 'Hello!' });
    expect(agent.fake.requests).toHaveLength(1);
    expect(agent.fake.requests[0]!.apiKey).toBe('test');
    expect(agent.fake.requests[0]!.system).toContain('You are helper');
    expect(agent.receiver.name).toBe('helper');

    await agent.close();
    expect(await reachable(agent.fake.url)).toBe(false);
    await expect(fetch(`${agent.url}/wellknown`)).rejects.toThrow();
  });

  it('leaves a fake it was given running, so several agents can share it', async () => {
    const fake = await FakeAnthropic.start({ replies: ['First.', 'Second.'] });
    cleanups.push(() => fake.close());
    const one = await startTestAgent({ dir: await agentFolder(), fake });
    const two = track(await startTestAgent({ dir: await agentFolder(), fake }));

    expect(await one.query('Hi')).toEqual({ status: 'success', body: 'First.' });
    await one.close();
    expect(await two.query('Hi')).toEqual({ status: 'success', body: 'Second.' });
    expect(two.fake).toBe(fake);
    expect(fake.requests).toHaveLength(2);
  });

  it('sends a protocol, given as a path in the agent folder or as text, by its hash with a data: source', async () => {
    const dir = await agentFolder({ 'protocols/echo.md': ECHO, 'routines/echo.ts': ECHO_ROUTINE });
    const agent = track(await startTestAgent({ dir }));

    expect(await agent.query({ value: 'a' }, { protocol: 'protocols/echo.md' })).toEqual({
      status: 'success',
      body: { value: 'a', turn: 1 },
    });
    expect(await agent.query({ value: 'b' }, { protocol: join(dir, 'protocols/echo.md') })).toEqual({
      status: 'success',
      body: { value: 'b', turn: 1 },
    });
    expect(await agent.query({ value: 'c' }, { protocol: ECHO })).toEqual({
      status: 'success',
      body: { value: 'c', turn: 1 },
    });
    expect(Object.keys((await (await fetch(`${agent.url}/wellknown`)).json()) as object)).toEqual([hashText(ECHO)]);

    // A document the agent does not hold is learned from the data: source the helper attaches.
    const learned = '---\nname: Learned\ndescription: x\nmultiround: false\n---\nAnything.\n';
    agent.fake.push('Fine.\nYES', 'ok');
    expect(await agent.query('ping', { protocol: learned })).toEqual({ status: 'success', body: 'ok' });
    expect(agent.receiver.registry.get(hashText(learned))?.origin).toBe('learned');
  });

  it('starts multiround conversations and sends their follow-ups', async () => {
    const dir = await agentFolder({ 'protocols/echo.md': ECHO, 'routines/echo.ts': ECHO_ROUTINE });
    const agent = track(await startTestAgent({ dir }));

    const opening = await agent.query({ value: 'a' }, { protocol: 'protocols/echo.md', multiround: true });
    expect(opening).toMatchObject({
      status: 'success',
      body: { value: 'a', turn: 1 },
      conversationId: expect.any(String),
    });
    const id = (opening as { conversationId: string }).conversationId;
    expect(await agent.followUp(id, { value: 'b' })).toMatchObject({
      status: 'success',
      body: { value: 'b', turn: 2 },
      conversationId: id,
    });
    expect(await agent.followUp('never-known', 'x')).toEqual({ status: 'failure', error: 'Conversation not found' });
  });

  it('runs without an LLM when llm is null', async () => {
    const agent = track(await startTestAgent({ dir: await agentFolder(), llm: null }));

    expect(agent.receiver.llm).toBeUndefined();
    expect(await agent.query('Hi')).toEqual({
      status: 'failure',
      error: 'This agent only accepts queries under the protocols listed at /wellknown',
    });
  });

  it('passes AnthropicModel options on, and takes another LLM instead of the fake', async () => {
    const slow = track(
      await startTestAgent({
        dir: await agentFolder(),
        anthropic: { timeoutMs: 200 },
        fake: { replies: [{ stall: true }] },
      }),
    );
    expect(await slow.query('Hi')).toEqual({ status: 'failure', error: 'LLM unavailable' });

    const llm = scriptedModel(['In process.']);
    const agent = track(await startTestAgent({ dir: await agentFolder(), llm }));
    expect(await agent.query('Hi')).toEqual({ status: 'success', body: 'In process.' });
    expect(agent.fake.requests).toHaveLength(0);
    expect(llm.requests).toHaveLength(1);
  });
});

describe('scriptedModel', () => {
  const forecast = defineTool({
    name: 'get_forecast',
    description: 'Forecast',
    input: z.object({ city: z.string() }),
    run: ({ city }) => ({ city, sky: 'sunny' }),
  });

  it('replies in order, runs tool calls through the loop, and records what it was asked', async () => {
    const llm = scriptedModel([{ toolUse: [{ name: 'get_forecast', input: { city: 'Paris' } }] }]);
    llm.push((request) => `Done after ${request.messages.length} messages.`);
    const usage: number[] = [];

    const result = await converse(llm, {
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'Weather?' }],
      tools: [forecast],
      onUsage: (call) => usage.push(call.inputTokens, call.outputTokens),
    });

    expect(result.text).toBe('Done after 3 messages.');
    expect(result.calls).toBe(2);
    expect(usage).toEqual([10, 5, 10, 5]);
    expect(llm.requests).toHaveLength(2);
    expect(llm.requests[0]!.messages).toHaveLength(1);
    expect(llm.requests[0]!.tools?.map((tool) => tool.name)).toEqual(['get_forecast']);
    expect(llm.requests[1]!.messages[2]).toEqual({
      role: 'user',
      content: [{ type: 'tool-result', toolCallId: 'call_scripted1', content: '{"city":"Paris","sky":"sunny"}' }],
    });
  });

  it('reports given usage, and fails as LLM unavailable on an Error reply or an exhausted script', async () => {
    const cause = new Error('overloaded');
    const llm = scriptedModel([{ text: 'ok', usage: { inputTokens: 7, outputTokens: 2 } }, cause]);
    const request = { system: '', messages: [{ role: 'user' as const, content: 'Hi' }] };

    expect(await llm.complete(request)).toMatchObject({
      text: 'ok',
      toolCalls: [],
      stopReason: 'stop',
      usage: { inputTokens: 7, outputTokens: 2 },
      model: 'scripted',
    });
    const failed = await llm.complete(request).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(AgoraError);
    expect(failed).toMatchObject({ code: 'LLM_UNAVAILABLE', message: 'LLM unavailable', cause });
    await expect(llm.complete(request)).rejects.toMatchObject({ code: 'LLM_UNAVAILABLE', message: 'LLM unavailable' });
  });
});
