import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/log.js';
import { modelFromEnvironment } from '../../src/llm/choose.js';
import { Receiver } from '../../src/receiver.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
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
