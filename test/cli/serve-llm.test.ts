// `agora serve --llm openai --llm-base-url …`: the CLI chooses the provider from its flags, says which model answers,
// and answers natural language through the openai SDK against the fake Chat Completions API.
import { describe, expect, it } from 'vitest';
import { LLM_ENV } from '../../src/llm/providers.js';
import { FakeOpenAI, type FakeRequest } from '../../src/testing/index.js';
import { makeAgentFolder } from '../helpers/agent-folder.js';
import { runCli, startServe } from '../helpers/cli.js';

// No key of the machine's environment may choose for the test.
const NO_KEYS = Object.fromEntries(LLM_ENV.map((name) => [name, '']));

describe('agora serve with an OpenAI-compatible LLM', () => {
  it('answers natural language through --llm openai --llm-base-url, and says so in its banner and /metrics', async () => {
    const fake = await FakeOpenAI.start({ fallback: (request: FakeRequest) => `You asked: ${request.lastUserText}` });
    const folder = await makeAgentFolder();
    const serve = await startServe(
      [folder.dir, '--port', '0', '--llm', 'openai', '--llm-base-url', fake.url, '--model', 'llama3.2'],
      { env: NO_KEYS },
    );
    try {
      expect(serve.output()).toMatch(/^agora: serving .*LLM: openai llama3\.2\)$/m);
      const response = await fetch(serve.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ body: 'Where is Paris?' }),
      });
      expect(await response.json()).toEqual({ status: 'success', body: 'You asked: Where is Paris?' });
      expect(fake.requests[0]!.body).toMatchObject({
        model: 'llama3.2',
        messages: [{ role: 'system' }, { role: 'user', content: 'Where is Paris?' }],
      });
      const metrics = await (await fetch(`${serve.url}/metrics`)).text();
      expect(metrics).toContain('agora_llm_info{provider="openai",model="llama3.2"} 1');
      expect(metrics).toContain('agora_llm_calls_total{protocol="natural_language",purpose="answer"} 1');
    } finally {
      await serve.stop();
      await fake.close();
      await folder.cleanup();
    }
  });

  it('refuses an unknown --llm, and --llm anthropic without a key, with one line each', async () => {
    const folder = await makeAgentFolder();
    try {
      const unknown = await runCli(['serve', folder.dir, '--port', '0', '--llm', 'gemini'], { env: NO_KEYS });
      expect(unknown.code).not.toBe(0);
      expect(unknown.stderr).toContain('--llm must be one of anthropic, openai, offline, got "gemini"');
      const keyless = await runCli(['serve', folder.dir, '--port', '0', '--llm', 'anthropic'], { env: NO_KEYS });
      expect(keyless.code).not.toBe(0);
      expect(keyless.stderr).toContain('The anthropic provider needs ANTHROPIC_API_KEY');
    } finally {
      await folder.cleanup();
    }
  });
});
