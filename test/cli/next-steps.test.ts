// Every common failure of the CLI says what to do next, in one line after its cause, with no stack trace.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startAgent } from '../../src/agent.js';
import { main } from '../../src/cli/main.js';
import { silentLogger } from '../../src/log.js';
import { echoProtocol, makeAgentFolder } from '../helpers/agent-folder.js';
import { captureOutput, cliArgs, startHubCommand } from '../helpers/cli.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Runs `agora …` in process and returns its exit code and output. */
async function run(...argv: string[]) {
  const output = captureOutput();
  const code = await main(argv);
  const result = { code, stdout: output.stdout(), stderr: output.stderr() };
  vi.restoreAllMocks();
  return result;
}

/** A loopback port nothing listens on (taken, then let go). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function agent(options: { tokens?: string[] } = {}) {
  const folder = await makeAgentFolder({ 'protocols/echo.md': echoProtocol() });
  cleanups.push(folder.cleanup);
  const running = await startAgent({
    dir: folder.dir,
    port: 0,
    logger: silentLogger,
    dashboard: false,
    typeCheck: false,
    ...options,
  });
  cleanups.push(() => running.close());
  return running;
}

describe('what a failure says to do next', () => {
  it('an unknown command or flag names the nearest one, in the CLI words', async () => {
    const command = await run('serv');
    expect(command.stderr).toBe('agora: unknown command "serv": did you mean `agora serve`? (see agora --help)\n');
    const flag = await run('send', 'http://127.0.0.1:1', 'hi', '--protocl', 'x.md');
    expect(flag.stderr).toBe('agora send: unknown flag --protocl: did you mean --protocol? (see agora send --help)\n');
    expect(flag.code).toBe(2);
    const missing = await run('send', 'http://127.0.0.1:1', 'hi', '--timeout');
    expect(missing.stderr).toBe('agora send: --timeout needs a value (see agora send --help)\n');
  });

  it('connection refused asks whether an agent runs there; a loopback address without a scheme is http', async () => {
    const port = await closedPort();
    const result = await run('send', `localhost:${port}`, 'hi');
    expect(result.code).toBe(1);
    const [cause, next, ...rest] = result.stderr.split('\n');
    expect(cause).toMatch(new RegExp(`^agora send: .*http://localhost:${port}.*connection refused`));
    expect(next).toBe(`  is an agent running at http://localhost:${port}? Start one with \`agora serve\``);
    expect(rest).toEqual(['']);
  });

  it('HTTP 401 names the flag and the variable of the token', async () => {
    const running = await agent({ tokens: ['a-secret-token-of-length'] });
    const result = await run('send', running.url, '{"message": "hi"}');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('\n  a token is required: for an agent pass --token <token> or set AGORA_TOKEN\n');
  });

  it('a port in use suggests --port', async () => {
    const running = await agent();
    const folder = await makeAgentFolder({ 'protocols/echo.md': echoProtocol() });
    cleanups.push(folder.cleanup);
    const result = await run('serve', folder.dir, '--port', String(running.port), '--host', '127.0.0.1');
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/EADDRINUSE/);
    expect(result.stderr).toContain('pick another with --port <n>, or --port 0 for any free one');
  });

  it('negotiating with an agent that has no LLM says what it does answer', async () => {
    const running = await agent();
    const result = await run('negotiate', running.url, '--task', 'convert units', '--llm', 'offline');
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Unsupported protocol');
    expect(result.stderr).toContain('(it has no LLM to negotiate with): see `agora wellknown <url>`');
  });

  it('a body that looks like JSON but does not parse is sent as text, and says so', async () => {
    const port = await closedPort();
    const result = await run('send', `http://127.0.0.1:${port}`, '{"message": hi}');
    expect(result.stderr).toMatch(/^agora send: the body is not valid JSON \(.*\): sending it as text/);
  });

  it('`agora … | head` ends quietly when the reader closes the pipe', async () => {
    const child = spawn(process.execPath, cliArgs(['--help']), { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(stderr).not.toMatch(/EPIPE|at .*\.js/);
    expect(code).toBe(0);
  }, 60_000);

  it('the hub says it stopped on Ctrl-C', async () => {
    const hub = await startHubCommand([]);
    cleanups.push(() => hub.stop('SIGKILL'));
    await hub.stop('SIGINT');
    expect(hub.output()).toMatch(/hub stopped/);
  }, 60_000);
});
