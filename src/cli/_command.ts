import { didYouMean } from './_next-step.js';
import { relative } from 'node:path';
import { parseArgs } from 'node:util';

/** One option of a command: its flag, type, environment variable and default, shown in `--help`. */
export type OptionSpec = {
  type: 'string' | 'boolean';
  description: string;
  env?: string;
  default?: string | boolean;
  short?: string;
  multiple?: boolean;
  /** Placeholder in help, e.g. `<seconds>`. */
  value?: string;
};

/** A CLI command: declared options and positionals; `run` only calls library functions. */
export type Command = {
  name: string;
  summary: string;
  usage: string;
  options: Record<string, OptionSpec>;
  /** Extra help text (examples, exit codes). */
  details?: string;
  run(args: ParsedArgs): Promise<number>;
};

/** A command's identity, as `agora --help` and its own help show it: name, one-line summary, usage line. */
export type CommandMeta = Pick<Command, 'name' | 'summary' | 'usage'>;

/** What a command declares besides its identity: options, extra help, and `run`. */
export type CommandBody = Omit<Command, keyof CommandMeta>;

/**
 * Declares a command: its identity on one line, then its options and `run`. A plain {@link Command} object works
 * as well; this only keeps the declarations short and alike.
 * @example export const command = defineCommand({ name: 'hash', summary: 'Print the hash', usage: 'agora hash <file>' }, { options: {}, run });
 */
export function defineCommand(meta: CommandMeta, body: CommandBody): Command {
  return { ...meta, ...body };
}

/** Parsed options (flags, then environment variables, then defaults) and positionals. */
export type ParsedArgs = {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
};

/** An error in the command line: printed as one line with exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Parses argv against a command's options, filling from the environment and defaults. */
export function parseCommandArgs(command: Command, argv: string[], env: NodeJS.ProcessEnv = process.env): ParsedArgs {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = {};
  for (const [name, spec] of Object.entries(command.options)) {
    options[name] = {
      type: spec.type,
      ...(spec.short ? { short: spec.short } : {}),
      ...(spec.multiple ? { multiple: true } : {}),
    };
  }
  let parsed;
  try {
    parsed = parseArgs({ args: joinNegativeValues(argv, options), allowPositionals: true, options, strict: true });
  } catch (error) {
    throw new UsageError(
      `${parseFailure(error as Error & { code?: string }, command)} (see agora ${command.name} --help)`,
    );
  }
  const values = { ...parsed.values } as ParsedArgs['values'];
  for (const [name, spec] of Object.entries(command.options)) {
    if (values[name] !== undefined) continue;
    const fromEnv = spec.env ? env[spec.env] : undefined;
    if (fromEnv !== undefined && fromEnv !== '') {
      values[name] =
        spec.type === 'boolean'
          ? /^(1|true|yes|on)$/i.test(fromEnv)
          : spec.multiple
            ? fromEnv
                .split(',')
                .map((item) => item.trim())
                .filter(Boolean)
            : fromEnv;
    } else if (spec.default !== undefined) {
      values[name] = spec.default;
    }
  }
  return { values, positionals: parsed.positionals };
}

/** Node's parseArgs error in the CLI's words: an unknown flag with the nearest one, a flag missing its value. */
function parseFailure(error: Error & { code?: string }, command: Command): string {
  const text = error.message.split('\n')[0] ?? '';
  const flag = /'(-{1,2}[^'\s]+)/.exec(text)?.[1];
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && flag) {
    const near = flag.startsWith('--') ? didYouMean(flag.slice(2), Object.keys(command.options)) : undefined;
    return `unknown flag ${flag}${near ? `: did you mean --${near}?` : ''}`;
  }
  if (error.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && flag) return `${flag} needs a value`;
  if (error.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') return `too many arguments`;
  return text;
}

/**
 * `--ttl -5` as `--ttl=-5`: parseArgs takes a value starting with `-` for a flag ("argument is ambiguous"), but a
 * negative number after a string option is its value, which the option's own check then judges.
 */
function joinNegativeValues(
  argv: string[],
  options: Record<string, { type: 'string' | 'boolean'; short?: string }>,
): string[] {
  const stringFlags = new Set<string>();
  for (const [name, spec] of Object.entries(options)) {
    if (spec.type !== 'string') continue;
    stringFlags.add(`--${name}`);
    if (spec.short) stringFlags.add(`-${spec.short}`);
  }
  const joined: string[] = [];
  for (let index = 0; index < argv.length; index++) {
    const argument = argv[index]!;
    if (argument === '--') {
      joined.push(...argv.slice(index));
      break;
    }
    const next = argv[index + 1];
    if (stringFlags.has(argument) && next !== undefined && /^-(\d|\.\d)/.test(next)) {
      joined.push(argument.startsWith('--') ? `${argument}=${next}` : `${argument}${next}`);
      index++;
    } else joined.push(argument);
  }
  return joined;
}

/** The help text of a command, generated from its declaration so it is always accurate. */
export function commandHelp(command: Command): string {
  const lines = [`agora ${command.name}: ${command.summary}`, '', `Usage: ${command.usage}`];
  const entries = Object.entries(command.options);
  if (entries.length) {
    lines.push('', 'Options:');
    const flags = entries.map(
      ([name, spec]) =>
        `${spec.short ? `-${spec.short}, ` : '    '}--${name}${spec.type === 'string' ? ` ${spec.value ?? '<value>'}` : ''}`,
    );
    const width = Math.max(...flags.map((flag) => flag.length)) + 2;
    entries.forEach(([, spec], index) => {
      const extra = [
        spec.env ? `env ${spec.env}` : '',
        spec.default !== undefined && spec.default !== false ? `default ${String(spec.default)}` : '',
      ]
        .filter(Boolean)
        .join(', ');
      lines.push(`  ${flags[index]!.padEnd(width)}${spec.description}${extra ? ` (${extra})` : ''}`);
    });
  }
  if (command.details) lines.push('', command.details.trimEnd());
  return `${lines.join('\n')}\n`;
}

/** A numeric option, checked. */
export function numberOption(args: ParsedArgs, name: string, { min = 0, integer = false } = {}): number | undefined {
  const raw = args.values[name];
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
    throw new UsageError(
      `--${name} must be ${integer ? 'an integer' : 'a number'} ≥ ${min}, got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}

/** A positional argument the command cannot do without, else a UsageError naming it (`missing <url>`). */
export function requiredPositional(args: ParsedArgs, index: number, name: string): string {
  const value = args.positionals[index];
  if (!value) throw new UsageError(`missing ${name}`);
  return value;
}

/** The `--timeout <seconds>` option of the commands that talk to an agent. */
export function timeoutOption(defaultSeconds: number): OptionSpec {
  return {
    type: 'string',
    value: '<seconds>',
    description: 'Bound on each exchange with the agent',
    env: 'AGORA_TIMEOUT',
    default: String(defaultSeconds),
  };
}

/** `--timeout` (declared by {@link timeoutOption}) in milliseconds, checked. */
export function timeoutMs(args: ParsedArgs, defaultSeconds: number): number {
  return Math.round((numberOption(args, 'timeout', { min: 0.001 }) ?? defaultSeconds) * 1000);
}

/** A path as the user would type it: relative under the working directory, else as given. */
export function displayPath(path: string): string {
  const nearby = relative(process.cwd(), path);
  return nearby && !nearby.startsWith('..') ? nearby : path;
}

/** A string option. */
export function stringOption(args: ParsedArgs, name: string): string | undefined {
  const raw = args.values[name];
  return typeof raw === 'string' ? raw : undefined;
}

/** Prints JSON for scripts (`--json`). */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
