import { plainFileError } from './_arguments.js';
import { startTracing, tracingRequested, type RunningTracing } from '../telemetry/setup.js';
import { commandHelp, parseCommandArgs, UsageError, type Command } from './_command.js';
import { didYouMean, nextStep } from './_next-step.js';

/** Every command, loaded lazily so `agora hash` loads neither the Anthropic SDK nor Express. */
export const COMMANDS: Record<string, { summary: string; load: () => Promise<{ command: Command }> }> = {
  serve: { summary: 'Serve an agent folder over HTTP', load: () => import('./serve.js') },
  hash: { summary: 'Print the hash of a protocol document', load: () => import('./hash.js') },
  validate: { summary: 'Check an agent folder: protocols, routines, tools', load: () => import('./validate.js') },
  send: { summary: 'Send a query to an agent and print the reply', load: () => import('./send.js') },
  wellknown: { summary: "List an agent's protocols", load: () => import('./wellknown.js') },
  negotiate: { summary: 'Negotiate a protocol for a task with an agent', load: () => import('./negotiate.js') },
  routines: {
    summary: 'List, show, approve or reject routines written by the LLM',
    load: () => import('./routines.js'),
  },
  protocols: {
    summary: "List the LLM's verdicts on learned protocols, or forget one (reset)",
    load: () => import('./protocols.js'),
  },
  init: { summary: 'Scaffold a new agent folder', load: () => import('./init.js') },
  check: { summary: "Run the wire profile's conformance cases against an agent", load: () => import('./check.js') },
  hub: { summary: 'Run a hub, or register an agent with one (hub register <url>)', load: () => import('./hub.js') },
  route: { summary: 'Ask the hub which agent a goal goes to, and why', load: () => import('./route.js') },
  chain: { summary: 'Route a goal and follow handoffs, checkpointing at the hub', load: () => import('./chain.js') },
  runs: { summary: "List the hub's unfinished chains", load: () => import('./runs.js') },
  resume: { summary: 'Continue an unfinished chain from its last checkpoint', load: () => import('./resume.js') },
  room: { summary: 'Create, watch and steer rooms of agents on a hub', load: () => import('./room.js') },
  mcp: { summary: 'Serve an Agora agent as an MCP server over stdio', load: () => import('./mcp.js') },
};

const EXIT_CODES = `Exit codes: 0 success · 1 failure (the peer's error, an invalid document…) · 2 usage error.`;

function mainHelp(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length)) + 2;
  return [
    'agora: build and run agents that speak the Agora protocol.',
    '',
    'Usage: agora <command> [options]',
    '',
    'Commands:',
    ...Object.entries(COMMANDS).map(([name, entry]) => `  ${name.padEnd(width)}${entry.summary}`),
    '',
    'Run `agora <command> --help` for the options of a command.',
    EXIT_CODES,
    '',
  ].join('\n');
}

let pipeWatched = false;

/** `agora … | head`: once the reader has closed the pipe, the output ends quietly (no EPIPE stack trace). */
export function endQuietlyOnClosedPipe(): void {
  if (pipeWatched) return;
  pipeWatched = true;
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      process.exit(process.exitCode ?? 0);
    });
}

/** Runs the CLI with `argv` (without node and the script); resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  endQuietlyOnClosedPipe();
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? rest[0] : undefined;
    if (topic && COMMANDS[topic]) {
      process.stdout.write(commandHelp((await COMMANDS[topic].load()).command));
      return 0;
    }
    process.stdout.write(mainHelp());
    return name ? 0 : 2;
  }
  if (name === '--version' || name === '-v') {
    const { createRequire } = await import('node:module');
    process.stdout.write(`${(createRequire(import.meta.url)('../../package.json') as { version: string }).version}\n`);
    return 0;
  }
  const entry = COMMANDS[name];
  if (!entry) {
    const near = didYouMean(name, Object.keys(COMMANDS));
    process.stderr.write(
      `agora: unknown command "${name}"${near ? `: did you mean \`agora ${near}\`?` : ''} (see agora --help)\n`,
    );
    return 2;
  }
  const { command } = await entry.load();
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(commandHelp(command));
    return 0;
  }
  let tracing: RunningTracing | undefined;
  try {
    const args = parseCommandArgs(command, rest);
    // Before the command builds a client or a server, so no call falls out of its trace; stopped (its spans sent)
    // before the CLI exits, a short command's too.
    if (args.values.trace === true || tracingRequested(process.env))
      tracing = await startTracing({ serviceName: SERVICE_NAMES[name] ?? 'agora-cli', env: process.env });
    return await command.run(args);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`agora ${name}: ${error.message}\n`);
      return 2;
    }
    // Node's file errors (`ENOENT: no such file or directory, open '…'`) in plain words, naming the path.
    const message = (plainFileError(error) ?? (error instanceof Error ? error.message : String(error))).split('\n')[0]!;
    const next = nextStep(message, name, Object.keys(command.options));
    process.stderr.write(`agora ${name}: ${message}${next ? `\n  ${next}` : ''}\n`);
    return 1;
  } finally {
    await tracing?.stop();
  }
}

/** The `service.name` of each long-running command's spans (`OTEL_SERVICE_NAME` wins); `agora-cli` for the rest. */
const SERVICE_NAMES: Record<string, string> = { serve: 'agora-agent', hub: 'agora-hub', mcp: 'agora-mcp' };

// Run directly (`tsx src/cli/main.ts …`, used by tests without a build).
if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`agora: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
