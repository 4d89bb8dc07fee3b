// Importing the package, running `agora hash` or answering with a routine must load neither LLM SDK
// (@anthropic-ai/sdk, openai): only a model's first call loads its own.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
// A module hook that makes any import resolving into the SDK throw, so loading it fails the child loudly.
const HOOKS = `export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (result.url.includes('/@anthropic-ai/sdk/') || result.url.includes('/node_modules/openai/')) throw new Error('SDK LOADED: ' + specifier);
  return result;
}`;
const PROBE = `import { register } from 'node:module';\nregister('data:text/javascript,' + encodeURIComponent(${JSON.stringify(HOOKS)}));\n`;

let folder: string;
let probe: string;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'agora-lazy-sdk-'));
  probe = join(folder, 'probe.mjs');
  await writeFile(probe, PROBE);
  await writeFile(join(folder, 'doc.md'), '---\nname: A\ndescription: B\nmultiround: false\n---\nText.\n');
});

afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

async function runChild(script: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', probe, '--import', 'tsx', '--input-type=module', '-e', script],
      { cwd: root },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('the LLM SDKs are loaded lazily', () => {
  it('is not loaded by importing the package', async () => {
    const result = await runChild(
      `const agora = await import('./src/index.ts'); console.log(typeof agora.AnthropicModel, typeof agora.OpenAIModel, typeof agora.chooseModel);`,
    );
    expect(result).toMatchObject({ code: 0, stdout: 'function function function\n' });
  });

  it('is not loaded by an agent with an LLM of each provider answering a routine query', async () => {
    const result = await runChild(
      `const { Receiver, chooseModel, silentLogger } = await import('./src/index.ts');
       const { mkdtemp, mkdir, writeFile } = await import('node:fs/promises');
       const { join } = await import('node:path');
       const dir = await mkdtemp(join(${JSON.stringify(folder)}, 'agent-'));
       await mkdir(join(dir, 'protocols')); await mkdir(join(dir, 'routines'));
       await writeFile(join(dir, 'protocols', 'echo.md'), '---\\nname: Echo\\ndescription: Echo.\\nmultiround: false\\n---\\nEcho the body.\\n');
       await writeFile(join(dir, 'routines', 'echo.ts'), 'export default (body) => body;\\n');
       for (const provider of ['anthropic', 'openai']) {
         const llm = chooseModel({ provider, apiKey: 'test', baseUrl: 'http://127.0.0.1:9' }, {});
         const receiver = await Receiver.start({ dir, llm, logger: silentLogger, watch: false });
         const [hash] = Object.keys(await receiver.wellknown());
         const reply = await receiver.query({ protocolHash: hash, body: { n: 1 } });
         console.log(provider, llm.provider, JSON.stringify(reply.body));
         await receiver.close();
       }`,
    );
    expect(result.stderr).not.toContain('SDK LOADED');
    expect(result.stdout).toBe('anthropic anthropic {"n":1}\nopenai openai {"n":1}\n');
  });

  it('is not loaded by agora hash', async () => {
    const result = await runChild(
      `const { main } = await import('./src/cli/main.ts'); process.exitCode = await main(['hash', ${JSON.stringify(join(folder, 'doc.md'))}]);`,
    );
    expect(result.stderr).not.toContain('SDK LOADED');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^[0-9a-f]{40}\n$/);
  });

  it('is loaded at the first call of a model (the probe does catch it)', async () => {
    const result = await runChild(
      `const { AnthropicModel } = await import('./src/index.ts');
       const model = new AnthropicModel({ apiKey: 'test', baseURL: 'http://127.0.0.1:9', maxRetries: 0 });
       const error = await model.complete({ system: '', messages: [{ role: 'user', content: 'hi' }] }).catch((thrown) => thrown);
       console.log(error.code, String(error.cause));`,
    );
    expect(result.stdout).toBe('LLM_UNAVAILABLE Error: SDK LOADED: @anthropic-ai/sdk\n');
  });

  it('loads openai at the first call of an OpenAI model (the probe does catch it)', async () => {
    const result = await runChild(
      `const { OpenAIModel } = await import('./src/index.ts');
       const model = new OpenAIModel({ apiKey: 'test', baseURL: 'http://127.0.0.1:9/v1', maxRetries: 0 });
       const error = await model.complete({ system: '', messages: [{ role: 'user', content: 'hi' }] }).catch((thrown) => thrown);
       console.log(error.code, String(error.cause));`,
    );
    expect(result.stdout).toBe('LLM_UNAVAILABLE Error: SDK LOADED: openai\n');
  });
});
