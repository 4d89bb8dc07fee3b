// Internal: the logging flags of a command that serves (`--log-level`, `--log-format`, `--quiet-requests`,
// `--log-sample`) and the logger and banner they give.
import {
  batchedStderr,
  consoleLogger,
  flushLogs,
  withFields,
  LOG_LEVELS,
  type LogFields,
  type Logger,
  type LogFormat,
  type LogLevel,
} from '../log.js';
import { numberOption, stringOption, UsageError, type OptionSpec, type ParsedArgs } from './_command.js';

/** `--log-level`, `--log-format` and `--quiet-requests`, for a command that serves. */
export const LOG_OPTIONS: Record<'log-level' | 'log-format' | 'quiet-requests' | 'log-sample', OptionSpec> = {
  'log-level': {
    type: 'string',
    value: '<debug|info|warn|error|silent>',
    description: 'Least severe log record written',
    env: 'AGORA_LOG_LEVEL',
    default: 'info',
  },
  'log-format': {
    type: 'string',
    value: '<text|json>',
    description:
      'Log records as text lines, or JSON lines (pino) with fields; in JSON the banner and the summary are records too',
    env: 'AGORA_LOG_FORMAT',
    default: 'text',
  },
  'quiet-requests': {
    type: 'boolean',
    description: 'No record per request (method, path, status, ms, protocol, path taken) at info',
    env: 'AGORA_QUIET_REQUESTS',
    default: false,
  },
  'log-sample': {
    type: 'string',
    value: '<fraction>',
    description: 'Share of requests logged, from 0 to 1 (0.01: one in a hundred); errors are all logged',
    env: 'AGORA_LOG_SAMPLE',
    default: '1',
  },
};

/** `--log-level` and `--log-format`, checked (`pretty` is accepted for `text`). */
function logOptions(args: ParsedArgs): { level: LogLevel; format: LogFormat } {
  const level = (stringOption(args, 'log-level') ?? 'info').toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level))
    throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`);
  const format = (stringOption(args, 'log-format') ?? 'text').toLowerCase();
  if (format !== 'text' && format !== 'pretty' && format !== 'json')
    throw new UsageError(`--log-format must be text or json, got ${JSON.stringify(format)}`);
  return { level: level as LogLevel, format: format === 'json' ? 'json' : 'text' };
}

/**
 * The logger of a serving command, from {@link LOG_OPTIONS}, and `say` for its banner: in JSON the banner is records
 * (stdout stays free of text a log collector would have to parse); in text, lines on stdout after `banner: `.
 */
export function commandLogger(
  args: ParsedArgs,
  name: string,
  banner = name,
  worker?: number,
): {
  logger: Logger;
  say: (line: string, fields?: LogFields) => void;
  requestLog: boolean;
  requestLogSample: number;
} {
  const options = { ...logOptions(args), write: batchedStderr() };
  const requestLogSample = numberOption(args, 'log-sample', { min: 0 }) ?? 1;
  if (requestLogSample > 1)
    throw new UsageError(`--log-sample must be a fraction from 0 to 1, got ${requestLogSample}`);
  // A worker's records say which worker: in the name of every text line, as a field of every JSON record.
  const batched =
    worker === undefined
      ? consoleLogger(name, options)
      : withFields(consoleLogger(`${name}[w${worker}]`, options), { worker });
  // Request records wait for the end of the turn; a warning or an error is written at once, with what came before
  // it (the last words before a crash are on disk, and a warning comes before the banner that follows it).
  const logger: Logger = {
    ...batched,
    warn: (message, fields) => (batched.warn(message, fields), flushLogs()),
    error: (message, fields) => (batched.error(message, fields), flushLogs()),
  };
  const prefix = worker === undefined ? banner : `${banner} (worker ${worker})`;
  const say = (line: string, fields?: LogFields) => {
    if (options.format === 'json') return logger.info(line, fields);
    flushLogs();
    process.stdout.write(`${prefix}: ${line}\n`);
  };
  return { logger, say, requestLog: args.values['quiet-requests'] !== true, requestLogSample };
}
