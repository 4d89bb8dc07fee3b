import { afterEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { chooseModel, modelFromEnvironment } from '../../src/llm/choose.js';
import { Receiver } from '../../src/receiver.js';
import { FakeAnthropic } from '../../src/testing/fake-anthropic.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.unstubAllEnvs();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function withFakeKey(replies: string[]) {
  const fake = await FakeAnthropic.start({ replies });
  const folder = await makeAgentFolder();
  cleanups.push(() => fake.close(), folder.cleanup);
  vi.stubEnv('ANTHROPIC_API_KEY', 'sk-ant-test');
  vi.stubEnv('ANTHROPIC_BASE_URL', fake.url);
  vi.stubEnv('AGORA_MODEL', 'claude-from-env');
  return { fake, dir: folder.dir };
}

describe('Receiver and the environment', () => {
  it('reads no environment: with a key set and no llm given, it answers with routines only', async () => {
    const { fake, dir } = await withFakeKey(['never sent']);
    const receiver = await Receiver.start({ dir, watch: false, logger: silentLogger });
    cleanups.push(() => receiver.close());
    expect(receiver.llm).toBeUndefined();
    await expect(receiver.query({ body: 'Hello?' })).rejects.toMatchObject({ code: 'NATURAL_LANGUAGE_UNSUPPORTED' });
    expect(fake.requests).toHaveLength(0);
  });

  it("answers natural language with Claude from the environment when given chooseModel()'s choice", async () => {
    const { fake, dir } = await withFakeKey(['Bonjour!']);
    const receiver = await Receiver.start({ dir, watch: false, logger: silentLogger, llm: chooseModel() });
    cleanups.push(() => receiver.close());
    expect(receiver.llm?.model).toBe('claude-from-env');
    expect(await receiver.query({ body: 'Hello?' })).toEqual({ status: 'success', body: 'Bonjour!' });
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]!.apiKey).toBe('sk-ant-test');
  });

  it('uses no LLM with llm: null, even with a key set', async () => {
    const { fake, dir } = await withFakeKey(['never sent']);
    const receiver = await Receiver.start({ dir, watch: false, logger: silentLogger, llm: null });
    cleanups.push(() => receiver.close());
    expect(receiver.llm).toBeUndefined();
    await expect(receiver.query({ body: 'Hello?' })).rejects.toMatchObject({ code: 'NATURAL_LANGUAGE_UNSUPPORTED' });
    expect(fake.requests).toHaveLength(0);
  });

  it('uses no LLM without a key', async () => {
    vi.stubEnv('ANTHROPIC_API_KEY', '');
    vi.stubEnv('ANTHROPIC_AUTH_TOKEN', '');
    const folder = await makeAgentFolder();
    cleanups.push(folder.cleanup);
    const receiver = await Receiver.start({ dir: folder.dir, watch: false, logger: silentLogger });
    cleanups.push(() => receiver.close());
    expect(receiver.llm).toBeUndefined();
  });
});

describe('modelFromEnvironment', () => {
  it('is Claude with the given or AGORA_MODEL model when a key is set, else undefined', () => {
    expect(modelFromEnvironment({ ANTHROPIC_API_KEY: ' ' })).toBeUndefined();
    expect(modelFromEnvironment({ ANTHROPIC_AUTH_TOKEN: 'token' }, 'claude-x')?.model).toBe('claude-x');
  });
});

describe('Receiver and its folder', () => {
  it('refuses a folder that does not exist, or a file, with an AgoraError in plain words', async () => {
    await expect(
      Receiver.start({ dir: '/nonexistent/agent', watch: false, logger: silentLogger, llm: null }),
    ).rejects.toMatchObject({
      name: 'AgoraError',
      code: 'INVALID_ARGUMENT',
      message: 'agent folder /nonexistent/agent: no such folder',
    });
    const folder = await makeAgentFolder({ 'notes.txt': 'x' });
    cleanups.push(folder.cleanup);
    await expect(
      Receiver.start({ dir: `${folder.dir}/notes.txt`, watch: false, logger: silentLogger, llm: null }),
    ).rejects.toThrow(/notes\.txt: is a file, not a folder$/);
  });
});
