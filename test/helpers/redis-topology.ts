// Redis topologies of a test's own, started by the test on free loopback ports: a 3-master, 3-replica cluster, a
// master with a replica watched by a Sentinel, a TLS server with an ACL user. Every process is killed by stop() (call
// it in afterAll) and, should the test runner die first, when this process exits.
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { freePort } from './redis-server.js';

const run = promisify(execFile);

/** Why Redis topologies cannot be tested here (no redis-server or redis-cli, no TLS in this build), or undefined. */
export function missingRedis(options: { tls?: boolean } = {}): string | undefined {
  for (const tool of ['redis-server', 'redis-cli'])
    if (spawnSync(tool, ['--version']).error) return `${tool} is not installed`;
  if (options.tls) {
    if (spawnSync('openssl', ['version']).error) return 'openssl is not installed';
    // A build without TLS refuses the directive at once; one with it starts (listening nowhere) until the timeout.
    const probe = spawnSync('redis-server', ['-'], { input: 'port 0\ntls-port 0\n', encoding: 'utf8', timeout: 1000 });
    if (/Bad directive|wrong number of arguments/i.test(`${probe.stdout}${probe.stderr}`))
      return 'this redis-server was built without TLS';
  }
  return undefined;
}

const LIVE = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of LIVE) child.kill('SIGKILL');
});

/** Starts one redis-server (or Sentinel) with these arguments and resolves once it accepts connections. */
async function server(args: string[]): Promise<ChildProcess> {
  // A replica writes the snapshot it receives into its folder: a temporary one unless the arguments name one.
  const child = spawn('redis-server', [...args, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: tmpdir(),
  });
  LIVE.add(child);
  child.once('exit', () => LIVE.delete(child));
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${output.slice(-500)}`)), 10_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (/Ready to accept connections|Sentinel ID is/.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server exited (${code}): ${output.slice(-500)}`));
    });
  });
  child.stdout!.resume();
  child.stderr!.resume();
  return child;
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10_000 });
  return stdout;
}

/** Polls until `check` holds (a test set-up step, bounded: it throws after `ms`). */
async function until(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(100);
  }
}

/** A Redis Cluster of 3 masters with a replica each (node timeout 1 s, so a failover takes a few seconds). */
export async function startCluster() {
  const dir = mkdtempSync(join(tmpdir(), 'agora-cluster-'));
  const ports = await Promise.all(Array.from({ length: 6 }, () => freePort()));
  const nodes = new Map<number, ChildProcess>();
  const argsOf = (port: number) => [
    ...['--port', String(port), '--cluster-enabled', 'yes', '--cluster-node-timeout', '1000'],
    ...['--cluster-config-file', join(dir, `nodes-${port}.conf`), '--dir', dir],
  ];
  await Promise.all(ports.map(async (port) => nodes.set(port, await server(argsOf(port)))));
  const addresses = ports.map((port) => `127.0.0.1:${port}`);
  await run('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', '1', '--cluster-yes'], {
    timeout: 30_000,
  });
  const replicasOnline = async () => {
    for (const port of ports) {
      if (!(await cli(port, 'cluster', 'info')).includes('cluster_state:ok')) return false;
      const info = await cli(port, 'info', 'replication');
      if (info.includes('role:master') && !info.includes('connected_slaves:1')) return false;
      if (info.includes('role:slave') && !info.includes('master_link_status:up')) return false;
    }
    return true;
  };
  await until('the cluster to be ok with every replica in sync', replicasOnline);
  /** The ports of the masters now. */
  const masters = async () => {
    const roles = await Promise.all(
      [...nodes.keys()].map(async (port) => ((await cli(port, 'role')).startsWith('master') ? port : 0)),
    );
    return roles.filter((port) => port > 0);
  };
  // A replica's first acknowledgement after its sync can take longer than a turn's WAIT (500 ms) on a loaded
  // machine: each master's first write is waited for here, not by the first test.
  for (const port of await masters()) {
    await cli(port, 'set', 'agora-test:warm-up', '1');
    await until(
      'each master to have a write acknowledged by its replica',
      async () => Number((await cli(port, 'wait', '1', '2000')).trim()) >= 1,
    );
  }
  return {
    url: `redis-cluster://${addresses.join(',')}`,
    ports,
    masters,
    /** SIGKILLs one node (its replica is promoted after the node timeout). */
    async kill(port: number) {
      const child = nodes.get(port);
      nodes.delete(port);
      if (child) await kill(child);
    },
    /** Starts a killed node again: it rejoins (empty) as a replica of the master promoted in its place. */
    async restart(port: number) {
      nodes.set(port, await server(argsOf(port)));
      await until('the restarted node to sync as a replica', async () =>
        (await cli(port, 'info', 'replication')).includes('master_link_status:up'),
      );
    },
    /** Resolves once every slot is served again (a replica promoted in the killed master's place). */
    recovered: () =>
      until('the cluster to recover', async () =>
        (await Promise.all([...nodes.keys()].map((port) => cli(port, 'cluster', 'info')))).every((info) =>
          info.includes('cluster_state:ok'),
        ),
      ),
    async stop() {
      await Promise.all([...nodes.values()].map(kill));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One plain Redis. */
export async function startSingle() {
  const port = await freePort();
  const child = await server(['--port', String(port)]);
  return { url: `redis://127.0.0.1:${port}/0`, stop: () => kill(child) };
}

/**
 * A master, two replicas and one Sentinel watching them as `agora` (down after 1 s): after a failover the promoted
 * replica still has one, so writes waiting for a replica go on.
 */
export async function startSentinel() {
  const dir = mkdtempSync(join(tmpdir(), 'agora-sentinel-'));
  const [masterPort, replicaPort, secondPort, sentinelPort] = await Promise.all(
    Array.from({ length: 4 }, () => freePort()),
  );
  const master = await server(['--port', String(masterPort!), '--dir', dir]);
  const replicas = await Promise.all(
    [replicaPort!, secondPort!].map((port) =>
      server(['--port', String(port), '--replicaof', '127.0.0.1', String(masterPort), '--dir', dir]),
    ),
  );
  // A replica acknowledges writes (WAIT) once its first sync is done: its link is up.
  await until('the replicas to sync', async () => {
    const links = await Promise.all([replicaPort!, secondPort!].map((port) => cli(port, 'info', 'replication')));
    return links.every((info) => info.includes('master_link_status:up'));
  });
  const config = join(dir, 'sentinel.conf');
  writeFileSync(
    config,
    [
      `port ${sentinelPort!}`,
      `sentinel monitor agora 127.0.0.1 ${masterPort!} 1`,
      'sentinel down-after-milliseconds agora 1000',
      'sentinel failover-timeout agora 5000',
      'sentinel parallel-syncs agora 1',
      '',
    ].join('\n'),
  );
  const sentinel = await server([config, '--sentinel', '--dir', dir]);
  await until('the Sentinel to see the replicas', async () => {
    const known = await cli(sentinelPort!, 'sentinel', 'replicas', 'agora');
    return known.includes(String(replicaPort)) && known.includes(String(secondPort));
  });
  const children = [master, ...replicas, sentinel];
  return {
    url: `redis-sentinel://127.0.0.1:${sentinelPort!}/agora`,
    /** SIGKILLs the first master. */
    killMaster: () => kill(master),
    /** Resolves once the Sentinel names a replica as master. */
    promoted: () =>
      until('the Sentinel to promote a replica', async () => {
        const address = await cli(sentinelPort!, 'sentinel', 'get-master-addr-by-name', 'agora');
        return !address.includes(String(masterPort));
      }),
    async stop() {
      await Promise.all(children.map(kill));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A TLS-only Redis (no plain port) whose default user is off and whose one user is `agora`, with a test CA. */
export async function startTlsRedis() {
  const dir = mkdtempSync(join(tmpdir(), 'agora-tls-'));
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => run('openssl', args, { cwd: dir, timeout: 20_000 });
  const key = ['-newkey', 'rsa:2048', '-nodes', '-days', '1'];
  await openssl('req', '-x509', ...key, '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/CN=agora-test-ca');
  await openssl('req', ...key, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  writeFileSync(file('ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  const sign = ['-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1', '-extfile', 'ext.cnf'];
  await openssl('x509', '-req', '-in', 'server.csr', ...sign, '-out', 'server.crt');
  const port = await freePort();
  const child = await server([
    ...['--port', '0', '--tls-port', String(port)],
    ...['--tls-cert-file', file('server.crt'), '--tls-key-file', file('server.key')],
    ...['--tls-ca-cert-file', file('ca.crt'), '--tls-auth-clients', 'no'],
    ...['--user', 'agora', 'on', '>s3cret pass', '~*', '&*', '+@all', '--user', 'default', 'off'],
  ]);
  return {
    port,
    caFile: file('ca.crt'),
    /** The user and password, percent-encoded as a URL carries them. */
    url: `rediss://agora:${encodeURIComponent('s3cret pass')}@127.0.0.1:${port}/0`,
    async stop() {
      await kill(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
