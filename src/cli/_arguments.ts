// Checks of what the user typed, before a command does anything: folders, files, ports, durations, URLs.
// Each failure is a UsageError naming the flag or argument, so it prints one line and exits 2.
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { displayPath, UsageError, type ParsedArgs } from './_command.js';

/** What is at a path: a folder, a file, or nothing (any other failure to look is thrown as it is). */
export async function pathKind(path: string): Promise<'folder' | 'file' | 'missing'> {
  try {
    return (await stat(path)).isDirectory() ? 'folder' : 'file';
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return 'missing';
    throw error;
  }
}

/** A folder argument (default `.`), resolved: it must exist and be a folder. `label` names it, e.g. `[dir]`. */
export async function folderArgument(value: string | undefined, label: string): Promise<string> {
  const path = resolve(value ?? '.');
  const kind = await pathKind(path);
  if (kind === 'missing') throw new UsageError(`${label} ${displayPath(path)}: no such folder`);
  if (kind === 'file') throw new UsageError(`${label} ${displayPath(path)}: is a file, not a folder`);
  return path;
}

/** A file argument, resolved: it must exist and be a file. */
export async function fileArgument(value: string, label: string): Promise<string> {
  const path = resolve(value);
  const kind = await pathKind(path);
  if (kind === 'missing') throw new UsageError(`${label} ${displayPath(path)}: no such file`);
  if (kind === 'folder') throw new UsageError(`${label} ${displayPath(path)}: is a folder, not a file`);
  return path;
}

/**
 * An agent's URL: http(s), absolute, returned as typed (the sender posts to it as given); a loopback address without a
 * scheme (`localhost:3000`, `127.0.0.1:3000`) is taken as http://.
 */
export function urlArgument(value: string, label = '<url>'): string {
  if (/^(localhost|127(\.\d{1,3}){3}|\[::1\])(:\d+)?(\/.*)?$/i.test(value)) return `http://${value}`;
  let parsed: URL | undefined;
  try {
    parsed = new URL(value);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    const hint = /^[\w-]+(\.[\w-]+)+(:\d+)?(\/.*)?$/.test(value) ? ` (did you mean https://${value}?)` : '';
    throw new UsageError(`${label} must be an http:// or https:// URL, got ${JSON.stringify(value)}${hint}`);
  }
  return value;
}

/** `--port`: an integer from 0 (any free port) to 65535. */
export function portOption(args: ParsedArgs, name = 'port'): number | undefined {
  const raw = args.values[name];
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (typeof raw !== 'string' || raw.trim() === '' || !Number.isInteger(value) || value < 0 || value > 65_535) {
    throw new UsageError(`--${name} must be a port number from 0 to 65535, got ${JSON.stringify(raw)}`);
  }
  return value;
}

/** A duration in seconds: a finite number, at least `min` (default: more than 0). */
export function secondsOption(args: ParsedArgs, name: string, { min }: { min?: number } = {}): number | undefined {
  const raw = args.values[name];
  if (raw === undefined) return undefined;
  const value = Number(raw);
  const ok =
    typeof raw === 'string' &&
    raw.trim() !== '' &&
    Number.isFinite(value) &&
    (min === undefined ? value > 0 : value >= min);
  if (!ok)
    throw new UsageError(
      `--${name} must be a number of seconds ${min === undefined ? 'above 0' : `of at least ${min}`}, got ${JSON.stringify(raw)}`,
    );
  return value;
}

const FILE_ERRORS: Record<string, string> = {
  ENOENT: 'no such file or folder',
  ENOTDIR: 'a part of the path is a file, not a folder',
  EISDIR: 'is a folder, not a file',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EEXIST: 'already exists',
  ENOSPC: 'no space left on the device',
  EROFS: 'the file system is read-only',
  EMFILE: 'too many open files',
  ENAMETOOLONG: 'the name is too long',
};

/** A file system error in plain words, naming the path (`protocols/x.md: no such file or folder`); else undefined. */
export function plainFileError(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const { code, path } = error as NodeJS.ErrnoException;
  const words = code ? FILE_ERRORS[code] : undefined;
  if (!words) return undefined;
  return path ? `${displayPath(path)}: ${words}` : words;
}
