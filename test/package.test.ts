// The package as a new user gets it, outside this repository: `npm pack`, installed in a fresh ESM project with no
// network (from npm's cache, through a lockfile made from ours), the README's "In your code" file compiled with
// `tsc --strict --skipLibCheck false` and run, every public entry's types compiled the same way, and the README's MCP
// host configuration printed there and started from an empty folder, where it answers an MCP host.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../src/agent.js';
import { silentLogger } from '../src/log.js';
import { makeAgentFolder } from './helpers/agent-folder.js';
import { consumerLock, packageFiles } from './helpers/consumer.js';
import { UNITS_PD, UNITS_ROUTINE } from './bindings/mcp/_fixtures.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);
const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
  exports: Record<string, unknown>;
};
/** What a TypeScript user of the package has beside it (the README says so). */
const CONSUMER_DEV = ['typescript', '@types/node'];
/** Entries whose types need a peer the user installs with them (`./express`: express and @types/express). */
const PEER_ENTRIES: Record<string, string[]> = { './express': ['express', '@types/express'] };
const TSC = ['--strict', '--skipLibCheck', 'false', '--module', 'nodenext', '--target', 'es2022', '--types', 'node'];

let base: string;
let project: string;
let readme: string;

/** Runs `command` in `cwd` with npm kept off the network; resolves with its output, or rejects with its stderr. */
async function sh(cwd: string, command: string, args: string[], timeout = 90_000) {
  const env = { ...process.env, npm_config_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false' };
  return run(command, args, { cwd, env, timeout, maxBuffer: 16 * 1024 * 1024 });
}

beforeAll(async () => {
  readme = await readFile(join(root, 'README.md'), 'utf8');
  base = await mkdtemp(join(tmpdir(), 'agora-package-'));
  await sh(root, process.execPath, ['scripts/build.mjs', 'which the package test packs'], 300_000);
  const packed = await sh(root, 'npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', base]);
  const tarball = join(base, (JSON.parse(packed.stdout) as { filename: string }[])[0]!.filename);
  project = join(base, 'my-project');
  await mkdir(project);
  // What `npm init -y && npm pkg set type=module && npm install <tarball> && npm install -D …` writes.
  const peers = Object.values(PEER_ENTRIES).flat();
  await writeFile(
    join(project, 'package.json'),
    JSON.stringify({
      name: 'my-project',
      version: '1.0.0',
      type: 'module',
      dependencies: { [manifest.name]: `file:${tarball}` },
      devDependencies: Object.fromEntries([...CONSUMER_DEV, ...peers].map((name) => [name, '*'])),
    }),
  );
  const lock = consumerLock(
    JSON.parse(await readFile(join(root, 'package-lock.json'), 'utf8')),
    JSON.parse(await readFile(join(root, 'package.json'), 'utf8')),
    { name: 'my-project', tarball, dev: [...CONSUMER_DEV, ...peers] },
  );
  await writeFile(join(project, 'package-lock.json'), JSON.stringify(lock, null, 2));
  await sh(project, 'npm', ['ci', '--offline', '--no-audit', '--no-fund']);
}, 400_000);

afterAll(async () => {
  if (base) await rm(base, { recursive: true, force: true });
});

describe('the packed package, in a project of its own', () => {
  it("compiles the README's agent.ts and every public entry with tsc --strict --skipLibCheck false, and runs it", async () => {
    const code = /^```ts runnable\n\/\/ agent\.ts\n([\s\S]*?)^```$/m.exec(readme)?.[1];
    expect(code, 'the README has a runnable block named agent.ts').toBeDefined();
    expect(readme).toContain('npm init -y && npm pkg set type=module');
    expect(readme).toContain(
      'npx tsc --strict --module nodenext --target es2022 --types node agent.ts && node agent.js',
    );
    await writeFile(join(project, 'agent.ts'), code!);
    // Every entry, with only the peers an entry names installed beside it (PEER_ENTRIES).
    const entries = Object.keys(manifest.exports).filter((entry) => entry !== './package.json');
    const lines = entries.map(
      (entry, index) => `import * as entry${index} from '${manifest.name}${entry.slice(1)}';\nvoid entry${index};`,
    );
    await writeFile(join(project, 'entries.ts'), `${lines.join('\n')}\n`);
    const tsc = join(project, 'node_modules/typescript/bin/tsc');
    const compiled = await sh(project, process.execPath, [tsc, ...TSC, 'agent.ts', 'entries.ts']).then(
      () => '',
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );
    expect(compiled).toBe('');
    const { stdout } = await sh(project, process.execPath, ['agent.js'], 30_000);
    expect(stdout.trim()).toBe("{ greeting: 'Hello, Ada' }");
  }, 180_000);

  it('ships no generated routine and no local state', async () => {
    const files = await packageFiles(root, base);
    expect(files).toContain('routines/unit-conversion.ts');
    expect(files).toContain('dist/index.js');
    expect(files.filter((file) => /(^|\/)(generated|\.agora)\//.test(file))).toEqual([]);
  }, 60_000);
});

describe("the README's MCP host configuration", () => {
  let agent: RunningAgent;
  let folder: Awaited<ReturnType<typeof makeAgentFolder>>;
  beforeAll(async () => {
    folder = await makeAgentFolder({ 'protocols/units.md': UNITS_PD, 'routines/units.ts': UNITS_ROUTINE });
    agent = await startAgent({ dir: folder.dir, port: 0, llm: null, watch: false, logger: silentLogger });
  }, 60_000);
  afterAll(async () => {
    await agent?.close();
    await folder?.cleanup();
  });

  it('is printed by the installed package and, started from an empty folder with no PATH, answers an MCP host', async () => {
    const line = /^npx (agora-agents mcp \S+ --print-config)/m.exec(readme)?.[1];
    expect(line, "the README's npx agora-agents mcp … --print-config").toBeDefined();
    const args = line!.split(' ').map((word) => (word.startsWith('http') ? agent.url : word));
    // npx with no network: the bin of the package installed in the project, by the package's own name.
    const printed = await sh(project, 'npx', ['--no-install', ...args], 60_000);
    const config = JSON.parse(printed.stdout) as {
      mcpServers: Record<string, { command: string; args: string[]; env?: Record<string, string> }>;
    };
    const [server] = Object.values(config.mcpServers);
    expect(server!.args[0]).toBe(join(project, 'node_modules', manifest.name, 'bin', 'agora.js'));
    const empty = await mkdtemp(join(base, 'host-'));
    const client = new Client({ name: 'package-test-host', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ ...server!, env: server!.env ?? {}, cwd: empty, stderr: 'pipe' }));
    try {
      expect(client.getServerVersion()?.name).toBeTruthy();
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toContain('unit_conversion');
    } finally {
      await client.close();
    }
  }, 120_000);
});
