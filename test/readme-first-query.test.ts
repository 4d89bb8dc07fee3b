// The README's first query, run as written (only the port changed, since 3000 may be taken on a test machine)
// against `agora serve .` started as `npm start` starts it: each command must print the reply the README shows.
import { exec } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServe } from './helpers/cli.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(exec);
let server: Awaited<ReturnType<typeof startServe>>;
let commands: { command: string; expected: unknown }[];

/** The commands of the first `sh` block under "A first query", each with the reply its `# …` line shows. */
function firstQueryCommands(readme: string): { command: string; expected: unknown }[] {
  const section = readme.slice(readme.indexOf('## A first query'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1]!;
  const found: { command: string; expected: unknown }[] = [];
  let pending = '';
  for (const line of block.split('\n')) {
    if (line.startsWith('# ')) {
      found.push({ command: pending.trim(), expected: JSON.parse(line.slice(2)) });
      pending = '';
    } else if (line.trim()) pending += `${line.replace(/\\$/, '')} `;
  }
  return found;
}

beforeAll(async () => {
  commands = firstQueryCommands(await readFile(`${root}README.md`, 'utf8'));
  // `npm start` is `node bin/agora.js serve .`: the same, on a free port, with no LLM key in its environment.
  server = await startServe(['.', '--port', '0'], {
    env: { ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '', AGORA_LLM: '' },
  });
});
afterAll(async () => {
  await server?.stop();
});

describe("the README's first query", () => {
  it('shows a curl and an agora send command, with their replies', () => {
    expect(commands.map(({ command }) => command.split(' ')[0])).toEqual(['curl', 'npx']);
  });

  it('answers each command, without any key, with the reply the README shows', async () => {
    const port = new URL(server.url).port;
    for (const { command, expected } of commands) {
      const { stdout } = await run(command.replace(/(localhost|127\.0\.0\.1):3000/g, `127.0.0.1:${port}`), {
        cwd: root,
        env: { ...process.env, ANTHROPIC_API_KEY: '', OPENAI_API_KEY: '' },
      });
      // The README shows agora send's pretty JSON on one line: compare values, not spacing.
      expect(JSON.parse(stdout), command).toEqual(expected);
    }
  }, 60_000);
});
