// The environment is read in three places only: the CLI, `startAgent({ llm: 'auto' })` and mcp.json's `${VAR}`.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startAgent } from '../../src/agent.js';
import { LLM_ENV } from '../../src/llm/providers.js';
import { silentLogger } from '../../src/log.js';
import { Receiver } from '../../src/receiver.js';
import { Sender } from '../../src/sender/sender.js';
import { FakeAnthropic } from '../../src/testing/fake-anthropic.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';

const SRC = resolve(import.meta.dirname, '../../src');
/** Where `process.env` may be read: the CLI, the agent's entry, and the `${VAR}` expansion of mcp.json. */
const READERS = [/^cli\//, /^agent\.ts$/, /^tool\/mcp\/connection\.ts$/];

function sources(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

// A source without its comments: JSDoc and block comments (from a line's start), then line comments.
function code(text: string): string {
  return text.replace(/^\s*\/\*[\s\S]*?\*\//gm, '').replace(/^\s*\/\/.*$/gm, '');
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.unstubAllEnvs();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('the environment', () => {
  it('is read (process.env) only by the CLI, the agent entry and the expansion of mcp.json', () => {
    const readers = sources(SRC)
      .map((file) => relative(SRC, file))
      .filter((file) => code(readFileSync(join(SRC, file), 'utf8')).includes('process.env'));
    expect(readers.filter((file) => !READERS.some((allowed) => allowed.test(file)))).toEqual([]);
    // The rule is not empty: the CLI does read it.
    expect(readers.some((file) => file.startsWith('cli/'))).toBe(true);
  });

  it('is blank in tests for every variable of every provider', () => {
    expect(LLM_ENV).toEqual(
      expect.arrayContaining(['AGORA_LLM', 'AGORA_MODEL', 'ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'OPENAI_BASE_URL']),
    );
    for (const name of LLM_ENV) expect(process.env[name], name).toBe('');
  });

  it('chooses no model for a Receiver or a Sender, even with a key set', async () => {
    vi.stubEnv('ANTHROPIC_API_KEY', 'sk-ant-test');
    const folder = await makeAgentFolder();
    cleanups.push(folder.cleanup);
    const receiver = await Receiver.start({ dir: folder.dir, watch: false, logger: silentLogger });
    cleanups.push(() => receiver.close());
    expect(receiver.llm).toBeUndefined();
    expect(new Sender({ logger: silentLogger }).llm).toBeUndefined();
  });

  it("gives startAgent the model of the environment only with llm: 'auto'; none without it", async () => {
    const fake = await FakeAnthropic.start({ replies: ['Bonjour!'] });
    const folder = await makeAgentFolder();
    cleanups.push(() => fake.close(), folder.cleanup);
    vi.stubEnv('ANTHROPIC_API_KEY', 'sk-ant-test');
    vi.stubEnv('ANTHROPIC_BASE_URL', fake.url);
    vi.stubEnv('AGORA_MODEL', 'claude-from-env');
    const options = { dir: folder.dir, port: 0, host: '127.0.0.1', watch: false, logger: silentLogger };
    const agent = await startAgent({ ...options, dashboard: false, llm: 'auto' });
    cleanups.push(() => agent.close());
    expect(agent.receiver.llm?.model).toBe('claude-from-env');
    expect(await agent.receiver.query({ body: 'Hello?' })).toEqual({ status: 'success', body: 'Bonjour!' });
    expect(fake.requests[0]!.apiKey).toBe('sk-ant-test');
    const none = await startAgent({ ...options, dashboard: false });
    cleanups.push(() => none.close());
    expect(none.receiver.llm).toBeUndefined();
    expect(fake.requests).toHaveLength(1);
  });
});
