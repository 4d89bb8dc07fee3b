import { existsSync, statSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgoraError, isAgoraError } from './errors.js';
import { frameworkDependency, type FrameworkDependency } from './init-dependency.js';

export type { FrameworkDependency, DependencyOrigin } from './init-dependency.js';

type Manifest = {
  version: string;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
};

/** The framework's own folder (the package root): its root agent is the template of new agents. */
export function frameworkRoot(): string {
  let directory = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 4; depth++) {
    if (existsSync(join(directory, 'package.json')) && existsSync(join(directory, 'protocols'))) return directory;
    directory = dirname(directory);
  }
  throw new AgoraError('INTERNAL', 'agora-agents: cannot find the framework folder (package.json with protocols/)');
}

/** Options of {@link initAgent}. */
export type InitOptions = {
  /** How the new agent depends on the framework: a version (`^0.1.0`), a URL, or a path to a folder or tarball. Default: see {@link frameworkDependency}. */
  framework?: string;
  /** Write into a folder that is not empty. */
  force?: boolean;
  /** Called for each file written (progress lines). */
  onFile?: (path: string) => void;
  /** Called once with what the `agora-agents` dependency points to, before anything is written. */
  onDependency?: (dependency: FrameworkDependency) => void;
};

const TEST_FILE = `// The agent's own test: it runs against a fake Anthropic Messages API on loopback (no key, no network).
// Run it with \`npm test\`.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { startTestAgent } from 'agora-agents/testing';

const dir = fileURLToPath(new URL('..', import.meta.url));
let agent;

before(async () => {
  agent = await startTestAgent({
    dir,
    // The fake answers queries under a protocol (the summary has no routine) with JSON, natural language with text.
    fake: {
      fallback: (request) =>
        request.system.includes('<protocol>') ? JSON.stringify({ summary: 'A short summary.' }) : 'Hello from the fake LLM.',
    },
  });
});

after(async () => {
  await agent?.close();
});

test('lists its protocols at /wellknown', async () => {
  const listing = await (await fetch(\`\${agent.url}/wellknown\`)).json();
  assert.ok(Object.keys(listing).length >= 1);
});

test('answers a protocol with its routine, without any LLM call', async () => {
  const before = agent.fake.requests.length;
  const text = await readFile(new URL('../protocols/unit-conversion.md', import.meta.url), 'utf8');
  const reply = await agent.query({ value: 10, from: 'km', to: 'mi' }, { protocol: text });
  assert.deepEqual(reply, { status: 'success', body: { value: 6.21371, unit: 'mi' } });
  assert.equal(agent.fake.requests.length, before);
});

test('keeps state across the turns of a multiround protocol', async () => {
  const text = await readFile(new URL('../protocols/shopping-list.md', import.meta.url), 'utf8');
  const first = await agent.query({ action: 'add', item: 'tea', quantity: 2 }, { protocol: text, multiround: true });
  assert.equal(first.status, 'success');
  const second = await agent.followUp(first.conversationId, { action: 'add', item: 'milk' });
  assert.deepEqual(second.body, { items: [{ item: 'milk', quantity: 1 }, { item: 'tea', quantity: 2 }], total: 3 });
});

test('answers natural language with the LLM', async () => {
  const reply = await agent.query('Hello, who are you?');
  assert.deepEqual(reply, { status: 'success', body: 'Hello from the fake LLM.' });
});

test('answers a protocol without a routine with the LLM, checking its JSON', async () => {
  const text = await readFile(new URL('../protocols/text-summary.md', import.meta.url), 'utf8');
  const reply = await agent.query({ text: 'Agora lets agents talk.', maxWords: 5 }, { protocol: text });
  assert.deepEqual(reply, { status: 'success', body: { summary: 'A short summary.' } });
});
`;

function readme(name: string): string {
  return `# ${name}

An [Agora](https://agoraprotocol.org) agent built with agora-agents.

\`\`\`sh
npm install && npm start   # serve it on http://127.0.0.1:3000
npm test                   # run its test against a fake LLM
\`\`\`

- \`protocols/*.md\`: the protocol documents it serves (listed at \`/wellknown\` as soon as they are saved).
- \`routines/<name>.ts\`: code that answers \`protocols/<name>.md\` without any LLM call.
- \`tools/*.ts\`: what its LLM (and its routines, through \`context.tools\`) can call.
- \`.agora/\`: what it learns at run time (documents from peers, verdicts, counters); not committed.

Set \`ANTHROPIC_API_KEY\` to let Claude answer natural language and the protocols that have no routine.
\`npx agora --help\` lists the commands.
`;
}

/**
 * Scaffolds a new agent: the framework's root agent (protocols/, routines/, tools/) as a template, plus
 * package.json, tsconfig.json, .gitignore, a README and a test against the fake LLM.
 * Returns the files written, relative to the new folder.
 */
export async function initAgent(target: string, options: InitOptions = {}): Promise<string[]> {
  const directory = resolve(target);
  try {
    return await scaffold(directory, options);
  } catch (error) {
    if (isAgoraError(error)) throw error;
    const reason = (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
    throw new AgoraError('INTERNAL', `writing the agent into ${directory}: ${reason}`, { cause: error });
  }
}

async function scaffold(directory: string, options: InitOptions): Promise<string[]> {
  // Everything is checked before the first write, so a mistake leaves nothing behind.
  const root = frameworkRoot();
  const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as Manifest;
  const dependency = frameworkDependency(directory, root, manifest.version, options.framework);
  if (existsSync(directory)) {
    if (!statSync(directory).isDirectory()) throw new AgoraError('BAD_REQUEST', `${directory} is a file, not a folder`);
    const entries = (await readdir(directory)).filter((entry) => entry !== '.git');
    if (entries.length && !options.force)
      throw new AgoraError('BAD_REQUEST', `${directory} is not empty (use --force to write into it anyway)`);
  }
  options.onDependency?.(dependency);
  await mkdir(directory, { recursive: true });
  const name =
    basename(directory)
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[._-]+/, '') || 'my-agent';
  const written: string[] = [];
  const write = async (path: string, content: string) => {
    await mkdir(dirname(join(directory, path)), { recursive: true });
    await writeFile(join(directory, path), content);
    written.push(path);
    options.onFile?.(path);
  };
  for (const folder of ['protocols', 'routines', 'tools']) {
    const source = join(root, folder);
    if (!existsSync(source)) continue;
    await cp(source, join(directory, folder), {
      recursive: true,
      // Only what the owner wrote: not routines the LLM generated for the framework's own agent.
      filter: (path) => !relative(source, path).split(/[\\/]/).includes('generated'),
    });
    for (const file of (await readdir(join(directory, folder), { recursive: true, withFileTypes: true })).filter(
      (entry) => entry.isFile(),
    )) {
      const path = relative(directory, join(file.parentPath, file.name)).split(/[\\/]/).join('/');
      written.push(path);
      options.onFile?.(path);
    }
  }
  await write(
    'package.json',
    `${JSON.stringify(
      {
        name,
        version: '0.1.0',
        private: true,
        type: 'module',
        description: 'An Agora agent.',
        scripts: {
          start: 'agora serve .',
          test: 'node --test',
          typecheck: 'tsc --noEmit',
          validate: 'agora validate .',
        },
        dependencies: { 'agora-agents': dependency.spec },
        // The framework's own versions: what its routines and tools were checked against. QuickJS and TypeScript
        // are also the routine writer's sandbox and checker (optional peers of agora-agents, wanted by an agent).
        devDependencies: {
          '@types/node': manifest.devDependencies?.['@types/node'] ?? '^20.19.0',
          'quickjs-emscripten': manifest.peerDependencies?.['quickjs-emscripten'] ?? '^0.32.0',
          typescript: manifest.peerDependencies?.typescript ?? '~5.9.0',
        },
        // esbuild (which loads routines) installs its binary in a script: allowed, so npm neither skips nor warns.
        allowScripts: { esbuild: true },
      },
      null,
      2,
    )}\n`,
  );
  await write(
    'tsconfig.json',
    `${JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
        },
        include: ['routines', 'tools'],
      },
      null,
      2,
    )}\n`,
  );
  await write('.gitignore', 'node_modules/\n.agora/\n');
  await write('README.md', readme(name));
  await write('test/agent.test.mjs', TEST_FILE);
  return written;
}
