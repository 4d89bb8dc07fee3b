#!/usr/bin/env node
// `npm test`: runs the vitest suite, with a throwaway Redis server when one can be started, so the Redis
// store contract and the multi-process tests run too. Extra arguments go to vitest.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildIfStale } from './build.mjs';

const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });

async function startRedis() {
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
    console.error(
      'test: redis-server is not installed: the Redis tests are skipped (apt-get install -y redis-server to run them)',
    );
    return undefined;
  }
  const dir = mkdtempSync(join(tmpdir(), 'agora-redis-'));
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${port}/0`;
  for (let attempt = 0; attempt < 100; attempt++) {
    const ping = spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' });
    if (ping.stdout?.trim() === 'PONG') {
      console.error(`test: redis-server ready at ${url}`);
      return {
        url,
        stop: () => {
          child.kill('SIGTERM');
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill('SIGKILL');
  console.error('test: redis-server did not start: the Redis tests are skipped');
  return undefined;
}

// `agora init` scaffolds new agents from this checkout's dist/ (the tests of init, and the package's test, too):
// built here when it is missing or older than a source file, so `npm ci && npm test` on a fresh clone needs no other
// step.
const built = buildIfStale('which agora init and the package test use');
if (built !== 0) process.exit(built);

const redis = process.env.AGORA_TEST_REDIS_URL ? undefined : await startRedis();
const env = { ...process.env, ...(redis ? { AGORA_TEST_REDIS_URL: redis.url } : {}) };
const vitest = spawn(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...process.argv.slice(2)], {
  stdio: 'inherit',
  env,
});
const stop = () => redis?.stop();
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => {
    vitest.kill(signal);
  });
vitest.on('exit', (code, signal) => {
  stop();
  process.exit(code ?? (signal ? 1 : 0));
});
