// Every core: N processes of an agent (or a hub) behind one port, with node's cluster module. The primary process
// serves nothing itself: it forks the workers, hands each new connection to one of them (round robin), starts a
// worker again when one dies, and stops them all on SIGINT/SIGTERM. Everything a turn needs lives in the shared store
// (Redis), so any worker may answer any turn.
import cluster, { type Worker } from 'node:cluster';
import { AgoraError } from '../errors.js';
import type { Logger } from '../log.js';

/** Workers at most (`--workers`): more processes than this help no machine and cost memory each. */
export const MAX_WORKERS = 64;

/** Options of {@link runPrimary}. */
export type PrimaryOptions = {
  /** Worker processes to keep running. */
  workers: number;
  /** Where the primary says what it does (workers starting, dying, started again). */
  logger: Logger;
  /** Called once every worker listens, with the port they share. */
  onListening?: (port: number) => void;
  /** Workers that die before they ever listened, in a row, before the primary gives up (default 5). */
  maxFailedStarts?: number;
};

/** Whether this process is a worker forked by {@link runPrimary}. */
export function isWorker(): boolean {
  return cluster.isWorker;
}

/**
 * This worker's number (1…N in the order they were started; a replacement gets a new one), or undefined outside a
 * cluster; its tie to the primary no longer keeps it alive, so a worker that fails to start, or has closed, exits as
 * a single process would.
 */
export function startWorker(): number | undefined {
  if (!cluster.isWorker) return undefined;
  (process.channel as { unref?(): void } | undefined)?.unref?.();
  return cluster.worker?.id;
}

/** Ends a worker's tie to its primary once it has closed; nothing elsewhere. */
export function leaveCluster(): void {
  if (cluster.isWorker && process.connected) process.disconnect();
}

/** `--workers`: 1 (one process) to {@link MAX_WORKERS}; more than one needs a shared store. */
export function checkWorkers(workers: number, sharedStore: boolean, flag = '--workers'): void {
  if (!Number.isInteger(workers) || workers < 1 || workers > MAX_WORKERS)
    throw new AgoraError('INVALID_ARGUMENT', `${flag} must be an integer from 1 to ${MAX_WORKERS}, got ${workers}`);
  if (workers > 1 && !sharedStore) {
    throw new AgoraError(
      'INVALID_ARGUMENT',
      `${flag} ${workers} needs a shared store: pass --store redis://… (with the memory store each worker would keep its own conversations)`,
    );
  }
}

/**
 * Runs the primary of a cluster until SIGINT/SIGTERM: forks `workers` copies of this very command (argv and
 * execArgv as given), starts another whenever one dies, and resolves with the exit code once all have stopped: 0
 * after a signal, 1 when a worker cannot start at first (a bad store URL, a port in use) or replacements keep
 * dying before they listen.
 */
export function runPrimary(options: PrimaryOptions): Promise<number> {
  const { logger, workers } = options;
  const maxFailedStarts = options.maxFailedStarts ?? 5;
  const listening = new Set<number>();
  let failedStarts = 0;
  let stopping = false;
  let announced = false;
  let exitCode = 0;

  return new Promise<number>((resolve) => {
    const live = new Set<Worker>();
    const fork = () => {
      const worker = cluster.fork();
      live.add(worker);
    };
    const stop = (code: number) => {
      if (stopping) return;
      stopping = true;
      exitCode = code;
      // Each worker closes as on its own SIGTERM: it finishes what it holds, then exits.
      for (const worker of live) worker.process.kill('SIGTERM');
      if (live.size === 0) resolve(exitCode);
    };
    cluster.on('listening', (worker, address) => {
      failedStarts = 0;
      listening.add(worker.id);
      if (!announced && listening.size >= workers) {
        announced = true;
        options.onListening?.(address.port);
      }
    });
    cluster.on('exit', (worker, code, signal) => {
      live.delete(worker);
      const started = listening.delete(worker.id);
      if (stopping) {
        if (live.size === 0) resolve(exitCode);
        return;
      }
      const how = signal ? `signal ${signal}` : `code ${code}`;
      // Before all have listened once, a worker that cannot start says the command cannot (the worker said why).
      if (!announced && !started) {
        logger.error(`worker ${worker.id} stopped with ${how} before it listened; stopping`, {
          event: 'workers-failed',
        });
        stop(1);
        return;
      }
      if (!started && (failedStarts += 1) >= maxFailedStarts) {
        logger.error(`${failedStarts} workers in a row stopped before they listened (the last with ${how}); stopping`, {
          event: 'workers-failed',
        });
        stop(1);
        return;
      }
      logger.warn(`worker ${worker.id} (pid ${worker.process.pid}) stopped with ${how}; starting another`, {
        event: 'worker-restart',
        worker: worker.id,
      });
      // A worker that dies at start is started again after a pause that grows, not in a tight loop.
      setTimeout(() => (stopping ? undefined : fork()), started ? 0 : Math.min(5000, 100 * 2 ** failedStarts));
    });
    process.once('SIGINT', () => stop(0));
    process.once('SIGTERM', () => stop(0));
    for (let index = 0; index < workers; index++) fork();
  });
}
