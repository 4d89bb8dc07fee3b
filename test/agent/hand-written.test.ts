import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../../src/agent.js';
import { memoryLogger } from '../../src/log.js';
import { echoProtocol, eventually, makeAgentFolder } from '../helpers/agent-folder.js';
import { runCli } from '../helpers/cli.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

// A routine that loads and runs, with a type error on its line 6.
const MISTYPED = `import { defineRoutine, z } from 'agora-agents';

export default defineRoutine({
  input: z.object({ message: z.string() }),
  handle(body) {
    const length: number = body.message;
    return { echo: body.message, length };
  },
});
`;
const ECHO = `import { defineRoutine, z } from 'agora-agents';

export default defineRoutine({
  input: z.object({ message: z.string() }),
  handle: (body) => ({ echo: body.message }),
});
`;

async function agentOf(files: Record<string, string>): Promise<{ agent: RunningAgent; lines: string[]; dir: string }> {
  const folder = await makeAgentFolder(files);
  cleanups.push(folder.cleanup);
  const logger = memoryLogger();
  const agent = await startAgent({ dir: folder.dir, port: 0, logger, watch: false, dashboard: false });
  cleanups.push(() => agent.close());
  await agent.receiver.settled();
  return { agent, lines: logger.lines, dir: folder.dir };
}

describe('hand-written routines and tools', () => {
  it('type-checks a routine as it loads and warns of the error with its file and line; the routine is served', async () => {
    const { agent, lines } = await agentOf({ 'protocols/echo.md': echoProtocol(), 'routines/echo.ts': MISTYPED });
    const warning = lines.find((line) => line.includes('TS2322'));
    expect(warning).toMatch(/^warn type error in a routine, served as loaded .*routines\/echo\.ts:6:11: error TS2322/);
    expect(Object.keys(await agent.receiver.wellknown())).toHaveLength(1);
  }, 120_000);

  it('says nothing of a routine and a tool that type-check', async () => {
    const { lines } = await agentOf({
      'protocols/echo.md': echoProtocol(),
      'routines/echo.ts': ECHO,
      'tools/shout.ts': `import { defineTool, z } from 'agora-agents';\nexport default defineTool({ name: 'shout', description: 'Shouts', input: z.object({ text: z.string() }), run: ({ text }) => text.toUpperCase() });\n`,
    });
    expect(lines.filter((line) => line.startsWith('warn'))).toEqual([]);
  }, 120_000);

  it('warns of a routine whose name matches no protocol', async () => {
    const { lines } = await agentOf({ 'protocols/echo.md': echoProtocol(), 'routines/ecko.ts': ECHO });
    expect(lines).toContain(
      'warn routine ecko (' +
        lines
          .find((line) => line.includes('routine ecko ('))!
          .split('(')[1]!
          .split(')')[0] +
        ') matches no protocol: a routine answers the document of its own name, protocols/ecko.md, and there is none',
    );
  }, 120_000);

  it('logs each protocol, routine and tool file added, changed or removed, and a protocol left unserved and why', async () => {
    const { agent, lines, dir } = await agentOf({ 'protocols/echo.md': echoProtocol(), 'routines/echo.ts': ECHO });
    const { write } = {
      write: (path: string, text: string) =>
        import('node:fs/promises').then((fs) => fs.writeFile(join(dir, path), text)),
    };
    await write('protocols/other.md', echoProtocol('Other'));
    await agent.receiver.registry.scan();
    // A new file is taken once it has settled (half a second unchanged).
    await eventually(() => lines.some((line) => /^info protocol other\.md added: [0-9a-f]{40}$/.test(line)), 20_000);
    await agent.receiver.settled();
    expect(lines).toContain(
      'warn protocol other.md not served (left out of /wellknown): no routines/other.ts and no LLM; add the routine, or serve with an LLM',
    );
    await write('routines/other.ts', ECHO);
    await agent.receiver.reloadRoutines();
    expect(lines.some((line) => line.startsWith('info routine other added ('))).toBe(true);
    await write('routines/other.ts', ECHO.replace('echo:', 'other:'));
    await agent.receiver.reloadRoutines();
    expect(lines.some((line) => line.startsWith('info routine other changed ('))).toBe(true);
    await rm(join(dir, 'routines/other.ts'));
    await agent.receiver.reloadRoutines();
    expect(lines.some((line) => line.startsWith('info routine other removed ('))).toBe(true);
    await rm(join(dir, 'protocols/other.md'));
    await agent.receiver.registry.scan();
    await eventually(() => lines.some((line) => /^info protocol other\.md removed/.test(line)), 20_000);
  }, 120_000);
});

describe('agora validate', () => {
  it('loads and type-checks routines/ and tools/, names a routine of no protocol, and exits 1 on an error', async () => {
    const folder = await makeAgentFolder({
      'protocols/echo.md': echoProtocol(),
      'routines/echo.ts': MISTYPED,
      'routines/ecko.ts': ECHO,
      'tools/broken.ts': 'export default 42;\n',
    });
    cleanups.push(folder.cleanup);
    const result = await runCli(['validate', folder.dir], { timeoutMs: 120_000 });
    expect(result.stdout).toContain('invalid  routines/echo.ts:6:11: error TS2322');
    expect(result.stdout).toContain('warning  routines/ecko.ts: matches no protocol');
    expect(result.stdout).toMatch(/invalid {2}tools\/broken\.ts: not loaded: /);
    expect(result.code).toBe(1);
  }, 120_000);
});
