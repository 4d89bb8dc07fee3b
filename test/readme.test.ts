// The README cannot drift from the code: every TypeScript block compiles against the sources, the blocks marked
// `ts runnable` run (offline: the fake Messages API, loopback only), and no link leaves the repository.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
type Block = { index: number; line: number; runnable: boolean; code: string; page?: string };

function blocksOf(markdown: string): Block[] {
  const blocks: Block[] = [];
  const pattern = /^```ts( runnable)?\n([\s\S]*?)^```$/gm;
  for (let match = pattern.exec(markdown); match; match = pattern.exec(markdown)) {
    blocks.push({
      index: blocks.length,
      line: markdown.slice(0, match.index).split('\n').length,
      runnable: Boolean(match[1]),
      code: match[2]!,
    });
  }
  return blocks;
}

let readme: string;
let blocks: Block[];
// Blocks are written inside the repository (so `agora-agents` resolves through tsconfig paths to src/), in a
// folder of their own, removed afterwards.
let folder: string;

// The docs pages' blocks are held to the same rules as the README's.
const PAGES = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
let pages: Record<string, string>;

beforeAll(async () => {
  readme = await readFile(join(root, 'README.md'), 'utf8');
  pages = Object.fromEntries(
    await Promise.all(PAGES.map(async (page) => [page, await readFile(join(root, page), 'utf8')] as const)),
  );
  blocks = PAGES.flatMap((page) => blocksOf(pages[page]!).map((block) => ({ ...block, page })));
  blocks.forEach((block, index) => (block.index = index));
  folder = await mkdtemp(join(root, '.readme-blocks-'));
  for (const block of blocks) await writeFile(join(folder, `block-${block.index}.ts`), block.code);
});
afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe('README', () => {
  it('is a front page of at most ~300 lines, with a first query and TypeScript blocks in it and the docs, some runnable', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(300);
    expect(readme).toContain('"status":"success"');
    expect(blocks.filter((block) => block.page === 'README.md').length).toBeGreaterThanOrEqual(1);
    expect(blocks.length).toBeGreaterThanOrEqual(6);
    expect(blocks.filter((block) => block.runnable).length).toBeGreaterThanOrEqual(2);
  });

  it('compiles every TypeScript block against the sources', () => {
    const config = ts.readConfigFile(join(root, 'tsconfig.json'), ts.sys.readFile);
    const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
    const files = blocks.map((block) => join(folder, `block-${block.index}.ts`));
    const program = ts.createProgram(files, { ...parsed.options, noEmit: true, noUnusedLocals: false });
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((diagnostic) => diagnostic.file && files.includes(diagnostic.file.fileName))
      .map((diagnostic) => {
        const block = blocks[files.indexOf(diagnostic.file!.fileName)]!;
        const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
        return `${block.page}:${block.line + 1 + line}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
      });
    expect(problems).toEqual([]);
  }, 120_000);

  it('runs the runnable blocks offline, each to a clean exit', async () => {
    for (const block of blocks.filter((candidate) => candidate.runnable)) {
      const run = await runBlock(join(folder, `block-${block.index}.ts`));
      expect(run, `${block.page}:${block.line}`).toMatchObject({ code: 0, stderr: '' });
    }
  }, 120_000);

  it('links nowhere outside the repository, and every relative link exists', () => {
    for (const [page, text] of Object.entries(pages)) {
      const folder = page.includes('/') ? join(root, 'docs') : root;
      const targets = [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!);
      for (const target of targets.filter((candidate) => !/^(https?:|mailto:|#)/.test(candidate))) {
        const resolved = join(folder, target.split('#')[0]!);
        expect(resolved.startsWith(root), `${page}: ${target}`).toBe(true);
        expect(existsSync(resolved), `${page}: ${target}`).toBe(true);
      }
      expect(text, page).not.toMatch(/\(issue \d+\)|, issue \d+\)|\.\.\/shared/);
    }
  });
});

/** Runs a block with tsx from the repository root, with no Anthropic credentials. */
function runBlock(file: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env };
  delete env.ANTHROPIC_API_KEY;
  delete env.ANTHROPIC_AUTH_TOKEN;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
