import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { memoryLogger } from '../../src/log.js';
import { loadRoutineFolder } from '../../src/routine/load.js';

const cleanups: string[] = [];
afterEach(async () => {
  for (const folder of cleanups.splice(0)) await rm(folder, { recursive: true, force: true });
});

async function folder(files: Record<string, string>) {
  const root = await mkdtemp(join(tmpdir(), 'agora-load-'));
  cleanups.push(root);
  const directory = join(root, 'routines');
  await mkdir(directory);
  for (const [name, text] of Object.entries(files)) await writeFile(join(directory, name), text);
  return { directory, cacheDir: join(root, '.cache') };
}

describe('loadRoutineFolder', () => {
  it('loads each routine by file name, logs and skips one that fails, and reuses an unchanged file', async () => {
    const { directory, cacheDir } = await folder({
      'echo.ts': 'export default (body: unknown) => ({ echo: body });\n',
      'broken.ts': 'export default 42;\n',
    });
    const logger = memoryLogger();
    const first = await loadRoutineFolder(directory, cacheDir, logger);
    expect([...first.keys()]).toEqual(['echo']);
    expect(await first.get('echo')!.routine.handle('hi', {} as never)).toEqual({ echo: 'hi' });
    expect(logger.lines.filter((line) => line.startsWith('error routine'))).toHaveLength(1);
    expect(logger.lines[0]).toContain('broken.ts');

    const second = await loadRoutineFolder(directory, cacheDir, logger, first);
    expect(second.get('echo')).toBe(first.get('echo'));

    await writeFile(join(directory, 'echo.ts'), 'export default () => "changed";\n');
    const third = await loadRoutineFolder(directory, cacheDir, logger, second);
    expect(third.get('echo')).not.toBe(first.get('echo'));
    expect(await third.get('echo')!.routine.handle(null, {} as never)).toBe('changed');
    expect(logger.lines.some((line) => line.startsWith('info routine echo changed'))).toBe(true);
  });
});
