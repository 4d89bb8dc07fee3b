import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** A temporary agent folder with the given files (relative path → content); removed by `cleanup`. */
export async function makeAgentFolder(
  files: Record<string, string> = {},
): Promise<{ dir: string; write(path: string, content: string): Promise<void>; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'agora-test-'));
  const write = async (path: string, content: string) => {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  };
  for (const [path, content] of Object.entries(files)) await write(path, content);
  return { dir, write, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** A small JSON protocol document. */
export function echoProtocol(name = 'Echo', multiround = false, extra = ''): string {
  return `---\nname: ${name}\ndescription: Echoes a message.\nmultiround: ${multiround}\n---\n\nThe sender sends JSON {"message": string}. The receiver replies JSON {"echo": string}.\nErrors: {"error": "Invalid format"}.\n${extra}`;
}

/** Waits until `check` holds, polling (for file-watch tests, which depend on the OS). */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 3000): Promise<void> {
  const started = Date.now();
  for (;;) {
    if (await check()) return;
    if (Date.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
