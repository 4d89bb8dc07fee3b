// The two agent folders bench/sandbox.ts serves through `agora serve`'s server: the unit-conversion protocol with the
// routine hand-written in routines/, or the same source as an approved generated routine. Also usable alone, to
// profile one side: `tsx bench/_sandbox-agent.ts hand|generated <dir>` writes the folder and prints the request body.
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { protocolPrefix, protocolStem } from '../src/generation/lifecycle/records.js';
import { FileMemory } from '../src/memory/file.js';
import { hashText } from '../src/protocol/document.js';
import { body, GENERATED } from './_sandbox-routine.js';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Writes the agent folder for `mode` into `dir` (which exists) and returns the request body to POST. */
export async function writeAgent(mode: 'hand' | 'generated', dir: string): Promise<string> {
  const protocol = await readFile(join(root, 'protocols/unit-conversion.md'), 'utf8');
  const hash = hashText(protocol);
  await mkdir(join(dir, 'protocols'), { recursive: true });
  await mkdir(join(dir, 'tools'), { recursive: true });
  await writeFile(join(dir, 'protocols/unit-conversion.md'), protocol);
  await copyFile(join(root, 'tools/convert-units.ts'), join(dir, 'tools/convert-units.ts'));
  if (mode === 'hand') {
    await mkdir(join(dir, 'routines'), { recursive: true });
    await writeFile(join(dir, 'routines/unit-conversion.ts'), GENERATED);
  } else {
    const file = `routines/generated/${protocolStem('Unit conversion', hash)}.ts`;
    await mkdir(join(dir, 'routines/generated'), { recursive: true });
    await writeFile(join(dir, file), GENERATED);
    const at = new Date().toISOString();
    await new FileMemory(join(dir, '.agora')).set(`${protocolPrefix(hash)}/status`, {
      status: 'approved',
      kind: 'protocol',
      protocol: 'Unit conversion',
      hash,
      file,
      createdAt: at,
      updatedAt: at,
    });
  }
  return JSON.stringify({ protocolHash: hash, body });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [mode, dir] = process.argv.slice(2);
  if ((mode !== 'hand' && mode !== 'generated') || !dir)
    throw new Error('usage: tsx bench/_sandbox-agent.ts hand|generated <dir>');
  await mkdir(dir, { recursive: true });
  console.log(await writeAgent(mode, dir));
}
