import type { Logger } from '../../src/log.js';

/** A logger whose lines a test can wait for (a connection watcher's "reconnected"), instead of sleeping. */
export function watchedLogger() {
  const lines: string[] = [];
  const waiters: { pattern: RegExp; resolve(): void }[] = [];
  const push = (line: string) => {
    lines.push(line);
    for (const waiter of waiters.splice(0))
      if (waiter.pattern.test(line)) waiter.resolve();
      else waiters.push(waiter);
  };
  const logger: Logger = {
    info: (message) => push(`info ${message}`),
    warn: (message) => push(`warn ${message}`),
    error: (message) => push(`error ${message}`),
  };
  const next = (pattern: RegExp) => new Promise<void>((resolve) => waiters.push({ pattern, resolve }));
  return { logger, lines, next };
}
