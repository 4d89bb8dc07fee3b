import { createRequire } from 'node:module';

/** Where the framework writes what happens: one line per event. `debug` is absent when debug lines are off. */
export type Logger = {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  debug?(message: string): void;
};

/** How much the logger says, from most to least. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;

/** A log level: `debug` adds one line per request; `silent` says nothing. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** How lines are written: `text` (time, name, level, message) or `json` (pino's JSON lines). */
export type LogFormat = 'text' | 'json';

/** Longest message a log line carries; the rest is counted, not written. */
export const MAX_LOG_MESSAGE = 2000;

/** Options of {@link consoleLogger}. */
export type ConsoleLoggerOptions = {
  /** Least severe level written (default `info`). */
  level?: LogLevel;
  /** `text` (default) or `json`. */
  format?: LogFormat;
  /** Where lines go (default: stderr, so stdout stays free for data). */
  write?: (line: string) => void;
};

// C0 and C1 controls, DEL, and the Unicode line and paragraph separators: anything a terminal or a log reader
// could take for a new line or an escape sequence.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * A message made inert for a log line: control characters escaped (`\n`, `\u001b`…) so that text from a peer (a
 * document's name, a URL, a body) cannot forge a line or drive a terminal, and capped at {@link MAX_LOG_MESSAGE}.
 */
export function inert(message: string, max = MAX_LOG_MESSAGE): string {
  const capped = message.length > max ? `${message.slice(0, max)}… (${message.length - max} more characters)` : message;
  return capped.replace(CONTROL, (character) => NAMED[character] ?? `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 50 };

type PinoLike = Record<'debug' | 'info' | 'warn' | 'error', (message: string) => void>;

/**
 * A logger writing one line per event to stderr: timestamped text, or JSON lines written by pino (the well-kept
 * standard for structured logs in Node; its pretty printer is a separate package running in a worker, so the text
 * format is our own). Every text message goes through {@link inert}; JSON escapes by itself and is capped. Below `level` nothing is formatted; `debug` is left out entirely unless enabled, so
 * callers check for it once instead of paying per request.
 * @example const logger = consoleLogger('agora', { level: 'debug', format: 'json' });
 */
export function consoleLogger(prefix = 'agora', options: ConsoleLoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  const write = options.write ?? ((line: string) => void process.stderr.write(line));
  let emit: (severity: Exclude<LogLevel, 'silent'>, message: string) => void;
  if (options.format === 'json') {
    // Loaded only for JSON: text logging, and commands that never log, pay nothing for it.
    const pino = createRequire(import.meta.url)('pino') as typeof import('pino');
    const stream = { write: (line: string) => write(line) };
    const instance = pino.pino(
      { level, base: { name: prefix }, timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } },
      stream,
    ) as unknown as PinoLike;
    // JSON escapes control characters itself: only the length is capped.
    emit = (severity, message) => instance[severity](message.length > MAX_LOG_MESSAGE ? inert(message) : message);
  } else {
    emit = (severity, message) => write(`${new Date().toISOString()} ${prefix} ${severity} ${inert(message)}\n`);
  }
  const logger: Logger = {
    info: RANK.info >= RANK[level] ? (message) => emit('info', message) : () => {},
    warn: RANK.warn >= RANK[level] ? (message) => emit('warn', message) : () => {},
    error: RANK.error >= RANK[level] ? (message) => emit('error', message) : () => {},
  };
  if (level === 'debug') logger.debug = (message) => emit('debug', message);
  return logger;
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/** A logger that keeps its lines in memory (tests). */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    info: (message) => void lines.push(`info ${message}`),
    warn: (message) => void lines.push(`warn ${message}`),
    error: (message) => void lines.push(`error ${message}`),
  };
}
