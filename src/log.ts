import { fstatSync } from 'node:fs';
import { createRequire } from 'node:module';

/** Fields of a log record besides its message (a request's method, path, status, duration…): data, not text. */
export type LogFields = Record<string, string | number | boolean | undefined>;

/**
 * Where the framework writes what happens: one record per event, a message and, for some, fields. `debug` is absent
 * when debug lines are off. A logger that ignores the fields still works: the message says the essentials.
 */
export type Logger = {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  debug?(message: string, fields?: LogFields): void;
};

/** How much the logger says, from most to least. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;

/** A log level: `debug` adds what the MCP servers write to stderr; `silent` says nothing. */
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
  /** Where lines go (default: stderr, so stdout stays free for data); {@link batchedStderr} for a busy server. */
  write?: (line: string) => void;
};

// C0 and C1 controls, DEL, and the Unicode line and paragraph separators: anything a terminal or a log reader
// could take for a new line or an escape sequence. The test runs first: most messages have none, and a replace
// that finds nothing still costs a copy.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
// eslint-disable-next-line no-control-regex
const HAS_CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * A message made inert for a log line: control characters escaped (`\n`, `\u001b`…) so that text from a peer (a
 * document's name, a URL, a body) cannot forge a line or drive a terminal, and capped at {@link MAX_LOG_MESSAGE}.
 */
export function inert(message: string, max = MAX_LOG_MESSAGE): string {
  if (message.length <= max && !HAS_CONTROL.test(message)) return message;
  const capped = message.length > max ? `${message.slice(0, max)}… (${message.length - max} more characters)` : message;
  return capped.replace(
    CONTROL,
    (character) => NAMED[character] ?? `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 50 };

type PinoLike = Record<'debug' | 'info' | 'warn' | 'error', (fields: object, message: string) => void>;

// Fields as text: ` key=value` each, values quoted when they hold a space, and made inert like the message; a value
// the message already says is left out (the text line stays short, the JSON record keeps every field).
function textFields(fields: LogFields | undefined, message = ''): string {
  if (!fields) return '';
  let text = '';
  for (const key in fields) {
    const value = fields[key];
    if (value === undefined) continue;
    const plain = typeof value === 'string' ? value : String(value);
    if (message !== '' && message.includes(plain)) continue;
    const shown = typeof value === 'string' && (value === '' || QUOTED.test(value)) ? JSON.stringify(value) : plain;
    text += ` ${key}=${inert(shown, 500)}`;
  }
  return text;
}
const QUOTED = /[\s"=]/;

let lastMs = Number.NaN;
let lastText = '';

/**
 * `new Date(ms).toISOString()`, remembered for the last millisecond asked: it costs about a microsecond, and a busy
 * server writes the same millisecond dozens of times (log records, A2A task timestamps).
 */
export function isoTime(ms: number): string {
  if (ms !== lastMs) {
    lastText = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastText;
}

// One write(2) of at most this many bytes to a pipe is atomic: the lines of processes sharing one stderr (the
// workers of `--workers`) never interleave within a line.
const ATOMIC_WRITE_BYTES = 4096;
// A write to a regular file is atomic at any size (Linux holds the file position's lock across it): stderr to a
// file takes batches this large, one system call for about 400 request records instead of 27.
const FILE_WRITE_BYTES = 64 * 1024;

/** How long a log line may wait for others to share its write, at most (ms): {@link batchedStderr}'s delay. */
export const LOG_BATCH_MS = 20;

/** Writes log lines to `out` in batches; {@link LineBatch.flush} writes what is pending now. */
export class LineBatch {
  #pending = '';
  #bytes = 0;
  #scheduled = false;
  readonly #out: (chunk: string) => void;
  readonly #delayMs: number;
  readonly #maxBytes: number;

  /**
   * `out` receives whole lines, at most 4 KiB of them at a time (`maxBytes`) unless one line is longer: once that
   * much waits, or `delayMs` after the first line that waits (0: at the end of the event-loop turn).
   */
  constructor(out: (chunk: string) => void, delayMs = 0, maxBytes = ATOMIC_WRITE_BYTES) {
    this.#out = out;
    this.#delayMs = delayMs;
    this.#maxBytes = maxBytes;
  }

  /** Queues a line (ending in a newline): written with the others of its batch, or at once if it fills one. */
  readonly write = (line: string): void => {
    const bytes = Buffer.byteLength(line);
    if (this.#bytes + bytes > this.#maxBytes) this.flush();
    this.#pending += line;
    this.#bytes += bytes;
    if (!this.#scheduled) {
      this.#scheduled = true;
      if (this.#delayMs === 0) setImmediate(this.#timeUp);
      // Unreferenced: a waiting line never keeps the process alive ('exit' writes it).
      else setTimeout(this.#timeUp, this.#delayMs).unref();
    }
  };

  /** Writes every pending line now. */
  readonly flush = (): void => {
    if (this.#pending === '') return;
    const chunk = this.#pending;
    this.#pending = '';
    this.#bytes = 0;
    this.#out(chunk);
  };

  readonly #timeUp = (): void => {
    this.#scheduled = false;
    this.flush();
  };
}

let stderrBatch: LineBatch | undefined;

function stderrIsFile(): boolean {
  try {
    return fstatSync(2).isFile();
  } catch {
    return false;
  }
}

/**
 * A writer of log lines to stderr that costs one write per 4 KiB of lines (64 KiB to a file) instead of one per
 * line (a busy server's request log: 28% of its throughput written line by line, measured), the process's one. A line
 * is written at most {@link LOG_BATCH_MS} after it is logged, and at once on `process.exit`, on a fatal error and
 * after a signal the program handles: a line is lost only if the process is killed outright (SIGKILL, or a signal
 * nobody listens for) while it waits.
 */
export function batchedStderr(): (line: string) => void {
  if (stderrBatch === undefined) {
    // stderr to a file, a pipe or a terminal is written synchronously on Linux and macOS: the 'exit' listener's
    // write completes before the process ends.
    const batch = new LineBatch(
      (chunk) => void process.stderr.write(chunk),
      LOG_BATCH_MS,
      stderrIsFile() ? FILE_WRITE_BYTES : ATOMIC_WRITE_BYTES,
    );
    process.once('exit', batch.flush);
    stderrBatch = batch;
  }
  return stderrBatch.write;
}

/** Writes the lines {@link batchedStderr} holds now (before a `process.exit` of one's own, say: 'exit' does too). */
export function flushLogs(): void {
  stderrBatch?.flush();
}

/**
 * A logger writing one line per event to stderr: timestamped text, or JSON lines written by pino (the well-kept
 * standard for structured logs in Node; its pretty printer is a separate package running in a worker, so the text
 * format is our own). Every text message goes through {@link inert}; JSON escapes by itself and is capped. Below
 * `level` nothing is formatted; `debug` is left out entirely unless enabled, so callers check for it once instead of
 * paying per request.
 * @example const logger = consoleLogger('agora', { level: 'debug', format: 'json' });
 */
export function consoleLogger(prefix = 'agora', options: ConsoleLoggerOptions = {}): Logger {
  const level = options.level ?? 'info';
  const write = options.write ?? ((line: string) => void process.stderr.write(line));
  let emit: (severity: Exclude<LogLevel, 'silent'>, message: string, fields?: LogFields) => void;
  if (options.format === 'json') {
    // Loaded only for JSON: text logging, and commands that never log, pay nothing for it.
    const pino = createRequire(import.meta.url)('pino') as typeof import('pino');
    const stream = { write: (line: string) => write(line) };
    const instance = pino.pino(
      {
        level,
        base: { name: prefix },
        timestamp: () => `,"time":"${isoTime(Date.now())}"`,
        formatters: { level: (label) => ({ level: label }) },
      },
      stream,
    ) as unknown as PinoLike;
    // JSON escapes control characters itself: only the length is capped.
    emit = (severity, message, fields) =>
      instance[severity](fields ?? {}, message.length > MAX_LOG_MESSAGE ? inert(message) : message);
  } else {
    emit = (severity, message, fields) =>
      write(`${isoTime(Date.now())} ${prefix} ${severity} ${inert(message)}${textFields(fields, message)}\n`);
  }
  const logger: Logger = {
    info: RANK.info >= RANK[level] ? (message, fields) => emit('info', message, fields) : () => {},
    warn: RANK.warn >= RANK[level] ? (message, fields) => emit('warn', message, fields) : () => {},
    error: RANK.error >= RANK[level] ? (message, fields) => emit('error', message, fields) : () => {},
  };
  if (level === 'debug') logger.debug = (message, fields) => emit('debug', message, fields);
  return logger;
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/** A logger that keeps its lines in memory (tests). */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    info: (message, fields) => void lines.push(`info ${message}${textFields(fields)}`),
    warn: (message, fields) => void lines.push(`warn ${message}${textFields(fields)}`),
    error: (message, fields) => void lines.push(`error ${message}${textFields(fields)}`),
  };
}

/** A logger whose every record carries these fields too (a worker's `worker: 2`: `worker=2` in text, a field in JSON). */
export function withFields(logger: Logger, extra: LogFields): Logger {
  const tagged = (fields: LogFields | undefined): LogFields => ({ ...fields, ...extra });
  const result: Logger = {
    info: (message, fields) => logger.info(message, tagged(fields)),
    warn: (message, fields) => logger.warn(message, tagged(fields)),
    error: (message, fields) => logger.error(message, tagged(fields)),
  };
  const debug = logger.debug;
  if (debug) result.debug = (message, fields) => debug.call(logger, message, tagged(fields));
  return result;
}
