// A generated routine's log lines, passed to the call's logger within the sandbox's bounds: at most so many lines
// and bytes per call, then one warning and silence until the call ends.
import type { Logger } from '../../log.js';

/** Lines and bytes one call has logged so far; `cut` once it went past a bound. */
export type CallLog = { lines: number; bytes: number; cut: boolean };

/** The bounds on one call's log, and the routine's name for the warning. */
export type LogBounds = { name: string; maxLines: number; maxBytes: number };

/** The longest log line kept, in characters. */
const MAX_LINE = 2000;

/** Passes one guest log line to `logger` unless the call's log is over its bounds (then warns once). */
export function writeLogLine(
  log: CallLog,
  logger: Logger,
  level: 'info' | 'warn' | 'error',
  text: string,
  bounds: LogBounds,
): void {
  if (log.cut) return;
  const message = text.slice(0, MAX_LINE);
  const bytes = Buffer.byteLength(message);
  if (log.lines + 1 > bounds.maxLines || log.bytes + bytes > bounds.maxBytes) {
    log.cut = true;
    logger.warn(
      `${bounds.name}: log cut after ${log.lines} lines (${log.bytes} bytes) in one call; ` +
        `at most ${bounds.maxLines} lines and ${bounds.maxBytes} bytes`,
    );
    return;
  }
  log.lines += 1;
  log.bytes += bytes;
  logger[level](message);
}
