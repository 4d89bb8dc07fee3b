import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { cliReference } from '../../src/cli/_reference.js';
import { COMMANDS } from '../../src/cli/main.js';

describe('docs/cli.md', () => {
  it('is the page generated from the command definitions (run `npm run docs:cli` after changing a command)', async () => {
    const page = await readFile(new URL('../../docs/cli.md', import.meta.url), 'utf8');
    expect(page).toBe(await cliReference());
  });

  it('has a section for every command, with every one of its flags', async () => {
    const page = await readFile(new URL('../../docs/cli.md', import.meta.url), 'utf8');
    for (const [name, entry] of Object.entries(COMMANDS)) {
      expect(page, name).toContain(`## agora ${name}\n`);
      const section = page.slice(page.indexOf(`## agora ${name}\n`)).split('\n## ')[0]!;
      for (const option of Object.keys((await entry.load()).command.options))
        expect(section, `${name} --${option}`).toContain(`--${option}`);
    }
  });
});
