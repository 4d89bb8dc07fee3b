/** Where the framework writes what happens: one line per event. */
export type Logger = {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  debug?(message: string): void;
};

/** A logger writing timestamped lines to stderr (stdout stays free for data). */
export function consoleLogger(prefix = 'agora'): Logger {
  const line = (level: string, message: string) => process.stderr.write(`${new Date().toISOString()} ${prefix} ${level} ${message}\n`);
  return {
    info: (message) => line('info', message),
    warn: (message) => line('warn', message),
    error: (message) => line('error', message),
  };
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
