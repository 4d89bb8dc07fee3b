// What the CLI is given is checked before it does anything: one line naming the flag or argument, exit 2 for a
// mistake in the command line, 1 for a failure; file errors in plain words.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { plainFileError } from '../../src/cli/_arguments.js';
import { main } from '../../src/cli/main.js';
import { hashText } from '../../src/protocol/document.js';
import { echoProtocol, makeAgentFolder } from '../helpers/agent-folder.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Runs `agora …` in process and returns its exit code and output. */
async function run(...argv: string[]) {
  let stdout = '';
  let stderr = '';
  vi.spyOn(process.stdout, 'write').mockImplementation(
    (chunk: string | Uint8Array) => ((stdout += String(chunk)), true),
  );
  vi.spyOn(process.stderr, 'write').mockImplementation(
    (chunk: string | Uint8Array) => ((stderr += String(chunk)), true),
  );
  const code = await main(argv);
  vi.restoreAllMocks();
  return { code, stdout, stderr };
}

async function scratch() {
  const dir = await mkdtemp(join(tmpdir(), 'agora-arguments-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'a-file.txt');
  await writeFile(file, 'not a folder');
  return { dir, file };
}

/** One line on stderr, prefixed with the command, matching `pattern`; nothing on stdout. */
function expectOneLine(result: { code: number; stdout: string; stderr: string }, code: number, pattern: RegExp) {
  expect(result.stderr).toMatch(pattern);
  expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(result.stderr).not.toMatch(/ENOENT|EISDIR|ENOTDIR|ERR_|at .*\.ts:\d+/);
  expect(result.code).toBe(code);
}

describe('folders and files', () => {
  it('serve refuses a folder that does not exist, or a file', async () => {
    const { file } = await scratch();
    expectOneLine(
      await run('serve', '/nonexistent/agent', '--port', '0'),
      2,
      /^agora serve: \[dir\] \/nonexistent\/agent: no such folder\n$/,
    );
    expectOneLine(
      await run('serve', file, '--port', '0'),
      2,
      /^agora serve: \[dir\] .*a-file\.txt: is a file, not a folder\n$/,
    );
  });

  it('routines list refuses a folder that does not exist', async () => {
    expectOneLine(
      await run('routines', 'list', '/nonexistent'),
      2,
      /^agora routines: \[dir\] \/nonexistent: no such folder\n$/,
    );
    expectOneLine(await run('routines', 'show', 'x', '/nonexistent'), 2, /no such folder/);
  });

  it('negotiate refuses a --dir that does not exist', async () => {
    expectOneLine(
      await run('negotiate', 'http://127.0.0.1:9', '--task', 'x', '--dir', '/nonexistent'),
      2,
      /^agora negotiate: --dir \/nonexistent: no such folder\n$/,
    );
  });

  it('validate <file> validates that file; a missing path is named', async () => {
    const folder = await makeAgentFolder({
      'protocols/echo.md': echoProtocol(),
      'protocols/bad.md': '---\nname: x\n---\n',
    });
    cleanups.push(folder.cleanup);
    const good = await run('validate', join(folder.dir, 'protocols/echo.md'));
    expect(good).toEqual({ code: 0, stdout: `ok       ${hashText(echoProtocol())}  echo.md  (Echo)\n`, stderr: '' });
    const bad = await run('validate', join(folder.dir, 'protocols/bad.md'));
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/^invalid  bad\.md: invalid metadata: ✖ description is missing/);
    expectOneLine(
      await run('validate', '/nonexistent.md'),
      2,
      /^agora validate: \[dir\|file\] \/nonexistent\.md: no such file or folder\n$/,
    );
  });

  it('hash and send --protocol name a missing file or a folder in plain words', async () => {
    const { dir } = await scratch();
    expectOneLine(await run('hash', '/nonexistent.md'), 2, /^agora hash: <file> \/nonexistent\.md: no such file\n$/);
    expectOneLine(await run('hash', dir), 2, /^agora hash: <file> .*: is a folder, not a file\n$/);
    expectOneLine(
      await run('send', 'http://127.0.0.1:9', '{}', '--protocol', '/nonexistent.md'),
      2,
      /^agora send: --protocol \/nonexistent\.md: no such file\n$/,
    );
  });

  it('init refuses a --framework path that does not exist, writing nothing', async () => {
    const { dir, file } = await scratch();
    const target = join(dir, 'my-agent');
    expectOneLine(
      await run('init', target, '--framework', '/nonexistent'),
      2,
      /^agora init: --framework \/nonexistent: no such file or folder\n$/,
    );
    expect(existsSync(target)).toBe(false);
    expectOneLine(await run('init', file), 1, /^agora init: .*a-file\.txt is a file, not a folder\n$/);
  });
});

describe('plainFileError', () => {
  it("puts Node's file errors in plain words, naming the path", () => {
    const error = (code: string, path?: string) =>
      Object.assign(new Error(`${code}: raw text`), { code, ...(path ? { path } : {}) });
    expect(plainFileError(error('ENOENT', '/nowhere/x.md'))).toBe('/nowhere/x.md: no such file or folder');
    expect(plainFileError(error('EISDIR', '/tmp'))).toBe('/tmp: is a folder, not a file');
    expect(plainFileError(error('EACCES', '/root/secret'))).toBe('/root/secret: permission denied');
    expect(plainFileError(error('ECONNREFUSED'))).toBeUndefined();
    expect(plainFileError('text')).toBeUndefined();
  });
});

describe('values', () => {
  it('serve checks --port, durations and --public-url before starting', async () => {
    const { dir } = await scratch();
    expectOneLine(
      await run('serve', dir, '--port', '70000'),
      2,
      /^agora serve: --port must be a port number from 0 to 65535, got "70000"\n$/,
    );
    expectOneLine(
      await run('serve', dir, '-p', '-1'),
      2,
      /^agora serve: --port must be a port number from 0 to 65535, got "-1"\n$/,
    );
    expectOneLine(await run('serve', dir, '--port', 'abc'), 2, /--port must be a port number/);
    expectOneLine(
      await run('serve', dir, '--conversation-ttl', '-5'),
      2,
      /^agora serve: --conversation-ttl must be a number of seconds of at least 1, got "-5"\n$/,
    );
    expectOneLine(
      await run('serve', dir, '--routine-timeout', '0'),
      2,
      /^agora serve: --routine-timeout must be a number of seconds above 0, got "0"\n$/,
    );
    expectOneLine(
      await run('serve', dir, '--public-url', 'example.com'),
      2,
      /^agora serve: --public-url must be an http:\/\/ or https:\/\/ URL, got "example\.com" \(did you mean https:\/\/example\.com\?\)\n$/,
    );
    expectOneLine(await run('serve', dir, 'extra'), 2, /too many arguments/);
  });

  it('send, wellknown and negotiate want a URL (a loopback address without a scheme is http)', async () => {
    expectOneLine(
      await run('send', 'notaurl', 'hello'),
      2,
      /^agora send: <url> must be an http:\/\/ or https:\/\/ URL, got "notaurl"\n$/,
    );
    expectOneLine(await run('wellknown', 'ftp://example.com'), 2, /^agora wellknown: <url> must be an http/);
    expectOneLine(
      await run('negotiate', 'example.com:3000', '--task', 'x'),
      2,
      /^agora negotiate: <url> must be an http.*\(did you mean https:\/\/example\.com:3000\?\)\n$/,
    );
  });
});
