import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../src/log.js';
import { loadToolFolder } from '../../src/tool/load.js';

const TOOL = (name: string) => `
import { z } from 'zod';
import { defineTool } from 'agora-agents';
export default defineTool({ name: '${name}', description: 'd', input: z.object({ n: z.number() }), run: ({ n }) => n * 2 });
`;

let root: string;
afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

async function folder(files: Record<string, string>) {
  root = await mkdtemp(join(tmpdir(), 'agora-tools-'));
  const tools = join(root, 'tools');
  await mkdir(tools, { recursive: true });
  for (const [name, text] of Object.entries(files)) await writeFile(join(tools, name), text);
  return { tools, cache: join(root, '.agora', 'cache') };
}

describe('loadToolFolder', () => {
  it('loads one tool or an array of tools per file, and logs and skips the bad ones', async () => {
    const { tools, cache } = await folder({
      'double.ts': TOOL('double'),
      'pair.ts': `import { z } from 'zod';\nimport { defineTool } from 'agora-agents';\nexport default [defineTool({ name: 'one', description: 'd', input: z.string(), run: () => 1 }), defineTool({ name: 'two', description: 'd', input: z.string(), run: () => 2 })];\n`,
      'nothing.ts': 'export default 42;\n',
      'broken.ts': 'export default {{;\n',
      '_helper.ts': 'export const ignored = true;\n',
    });
    const logger = memoryLogger();
    const loaded = await loadToolFolder(tools, cache, logger);
    const names = [...loaded.values()].flatMap((entry) => entry.tools.map((tool) => tool.name)).sort();
    expect(names).toEqual(['double', 'one', 'two']);
    expect(
      await [...loaded.values()].find((entry) => entry.file.endsWith('double.ts'))!.tools[0]!.run({ n: 4 }, {}),
    ).toBe(8);
    expect(logger.lines.filter((line) => line.includes('not loaded'))).toHaveLength(2);
    expect(logger.lines.join('\n')).toContain('the default export must be defineTool');
  });

  it('reuses what it loaded for a file whose content did not change', async () => {
    const { tools, cache } = await folder({ 'double.ts': TOOL('double') });
    const first = await loadToolFolder(tools, cache, memoryLogger());
    const again = await loadToolFolder(tools, cache, memoryLogger(), first);
    expect(again.get(join(tools, 'double.ts'))).toBe(first.get(join(tools, 'double.ts')));
    await writeFile(join(tools, 'double.ts'), TOOL('twice'));
    const changed = await loadToolFolder(tools, cache, memoryLogger(), again);
    expect(changed.get(join(tools, 'double.ts'))!.tools[0]!.name).toBe('twice');
  });

  it('loads nothing from a missing folder', async () => {
    root = await mkdtemp(join(tmpdir(), 'agora-tools-'));
    expect((await loadToolFolder(join(root, 'missing'), join(root, 'cache'), memoryLogger())).size).toBe(0);
  });
});
