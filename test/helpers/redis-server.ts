import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';

/** A TCP port free on loopback now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/**
 * A redis-server of the test's own, on a free loopback port, that the test can stop and start again on the same
 * port (an outage). No persistence: every start is an empty server.
 */
export async function ownRedisServer() {
  const port = await freePort();
  let child: ChildProcess | undefined;

  async function start(): Promise<void> {
    const process = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    child = process;
    let output = '';
    await new Promise<void>((resolve, reject) => {
      process.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) resolve();
      });
      process.once('exit', (code) => reject(new Error(`redis-server exited (${code}): ${output.slice(-500)}`)));
    });
    process.stdout!.resume();
  }

  async function stop(): Promise<void> {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = once(running, 'exit');
    running.kill('SIGKILL');
    await exited;
  }

  /** Freezes the server (SIGSTOP): connections stay open, nothing is answered. */
  const pause = () => void child?.kill('SIGSTOP');
  const resume = () => void child?.kill('SIGCONT');

  await start();
  return { port, url: `redis://127.0.0.1:${port}/0`, start, stop, pause, resume };
}
