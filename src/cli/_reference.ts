// Internal: docs/cli.md, generated from the command declarations (`npm run docs:cli`), so the reference cannot
// drift from the flags; test/cli/reference.test.ts fails when the page is not the one generated.
import { commandHelp } from './_command.js';
import { COMMANDS } from './main.js';

/** The CLI reference page: every command, its usage, every option with its environment variable and default. */
export async function cliReference(): Promise<string> {
  const parts = [
    '# CLI reference',
    '',
    '<!-- Generated from src/cli/*.ts by `npm run docs:cli`: do not edit by hand. -->',
    '',
    "Every command prints one clear line and exits non-zero on a failure: 0 success, 1 failure (the peer's error, an",
    'invalid document…), 2 usage error. Options also read the environment variable shown; a flag wins over it.',
    'The common failures and what to do next: [errors.md](errors.md).',
    '',
    ...Object.keys(COMMANDS).map((name) => `- [\`agora ${name}\`](#agora-${name})`),
  ];
  for (const [name, entry] of Object.entries(COMMANDS)) {
    const { command } = await entry.load();
    parts.push('', `## agora ${name}`, '', '```text', commandHelp(command).trimEnd(), '```');
  }
  return `${parts.join('\n')}\n`;
}

// `tsx src/cli/_reference.ts` writes the page.
if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const { writeFile } = await import('node:fs/promises');
  await writeFile(new URL('../../docs/cli.md', import.meta.url), await cliReference());
}
