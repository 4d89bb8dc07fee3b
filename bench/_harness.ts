import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const root = fileURLToPath(new URL('..', import.meta.url));

/** A server process started for a benchmark. */
export type BenchServer = { url: string; port: number; child: ChildProcess; stop(): Promise<void> };

/** Starts a TypeScript entry with tsx in its own process and waits for its `PORT n` line. */
export function startProcess(script: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<BenchServer> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', `${root}${script}`, ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /(?:PORT|listening on http:\/\/[^:]+:)\s*(\d+)/.exec(output);
      if (match) {
        const port = Number(match[1]);
        resolve({
          url: `http://127.0.0.1:${port}`,
          port,
          child,
          stop: () =>
            new Promise((done) => {
              if (child.exitCode !== null) return done();
              child.once('close', () => done());
              child.kill('SIGTERM');
              setTimeout(() => child.kill('SIGKILL'), 5000).unref();
            }),
        });
      }
    });
    child.on('close', (code) => reject(new Error(`${script} ${args.join(' ')} exited with ${code}: ${output}`)));
  });
}

/** One load-test result. */
export type LoadResult = { name: string; requestsPerSecond: number; p99: number; p50: number; errors: number; non2xx: number };

/** Runs autocannon against a URL with a fixed JSON body (or per-request bodies). */
export async function load(
  name: string,
  options: { url: string; path?: string; body?: string; requests?: autocannon.Request[]; duration: number; connections?: number },
): Promise<LoadResult> {
  const result = await autocannon({
    url: `${options.url}${options.path ?? '/'}`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    connections: options.connections ?? 50,
    pipelining: 1,
    duration: options.duration,
    ...(options.body !== undefined ? { body: options.body } : {}),
    ...(options.requests ? { requests: options.requests } : {}),
  });
  return {
    name,
    requestsPerSecond: result.requests.average,
    p99: result.latency.p99,
    p50: result.latency.p50,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

/** Formats rows as an aligned Markdown table. */
export function table(header: string[], rows: (string | number)[][]): string {
  const cells = [header, ...rows.map((row) => row.map(String))];
  const widths = header.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)));
  const line = (row: string[]) => `| ${row.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  return [line(cells[0]!), `|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`, ...cells.slice(1).map(line)].join('\n');
}

/** Formats a number with thousands separators. */
export function formatNumber(value: number, digits = 0): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}
