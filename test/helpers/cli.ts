import { vi } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The command that runs the CLI from source (no build needed). */
export function cliArgs(args: string[]): string[] {
  return ['--import', 'tsx', `${root}src/cli/main.ts`, ...args];
}

/** What a command run to completion printed, and its exit code. */
export type RunResult = { code: number | null; stdout: string; stderr: string };

/** Options of {@link runNode}: `env` adds to (or, with `undefined`, removes from) this process's environment. */
export type RunOptions = { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number };

/** Runs `node …args` to completion (killed after `timeoutMs`, default 30 s) and returns its output and exit code. */
export function runNode(args: string[], options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: options.cwd ?? root,
      env: { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** Runs `agora …` to completion and returns its output and exit code. */
export function runCli(args: string[], options: RunOptions = {}): Promise<RunResult> {
  return runNode(cliArgs(args), options);
}

export type StartedCommand = {
  url: string;
  child: ChildProcess;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
};

const LISTENING = /listening on (http:\/\/[^\s"]+)/;

/** Starts `agora serve …` and resolves once it prints the URL it listens on (or the URL `printed` captures first). */
export function startServe(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
  printed = LISTENING,
): Promise<StartedCommand> {
  return startListening('serve', args, options, printed);
}

/** Starts `agora hub …` (on port 0 unless `--port` is given, no LLM key, memory store) and resolves once it listens. */
export function startHubCommand(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<StartedCommand> {
  const port = args.includes('--port') ? [] : ['--port', '0'];
  return startListening('hub', [...port, ...args], {
    ...options,
    env: { ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: '', OPENAI_API_KEY: '', AGORA_HUB_STORE: '', ...options.env },
  });
}

/** Starts `agora <command> …` and resolves once it prints the URL it listens on. */
function startListening(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv },
  printed = LISTENING,
): Promise<StartedCommand> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, cliArgs([command, ...args]), {
      cwd: options.cwd ?? root,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`agora ${command} did not start:\n${output}`));
    }, 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      // In JSON logs the URL is followed by the record's closing quote.
      const match = printed.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({
          url: match[1]!.replace('0.0.0.0', '127.0.0.1'),
          child,
          output: () => output,
          stop: (signal = 'SIGTERM') =>
            new Promise((done) => {
              // A process killed by a signal has a null exitCode but a signalCode: it is gone all the same.
              if (child.exitCode !== null || child.signalCode !== null) return done(child.exitCode);
              child.once('close', (code) => done(code));
              child.kill(signal);
            }),
        });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`agora ${command} exited with ${code}:\n${output}`));
    });
  });
}

/** Captures what `main` (the CLI in process) writes to stdout and stderr; restored by `vi.restoreAllMocks()`. */
export function captureOutput(): { stdout(): string; stderr(): string } {
  let stdout = '';
  let stderr = '';
  vi.spyOn(process.stdout, 'write').mockImplementation(
    (chunk: string | Uint8Array) => ((stdout += String(chunk)), true),
  );
  vi.spyOn(process.stderr, 'write').mockImplementation(
    (chunk: string | Uint8Array) => ((stderr += String(chunk)), true),
  );
  return { stdout: () => stdout, stderr: () => stderr };
}
