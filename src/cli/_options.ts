// Internal: the options several commands declare, written once so their flags, environment variables and help read
// the same everywhere, with the code that reads them.
import type { OptionSpec, ParsedArgs } from './_command.js';

/** `--json`: print `what` as JSON for scripts instead of lines for people. */
export function jsonOption(what: string): OptionSpec {
  return { type: 'boolean', description: what };
}

/** Whether `--json` (declared by {@link jsonOption}) was given. */
export function wantsJson(args: ParsedArgs): boolean {
  return args.values.json === true;
}

/** `--token <token>`: the bearer token sent to an agent that requires one. */
export const AGENT_TOKEN_OPTION: OptionSpec = { type: 'string', value: '<token>', description: 'Bearer token, for an agent that requires one', env: 'AGORA_TOKEN' };

/** `--token <token>` (repeatable): the bearer tokens a server requires; `what` says for which routes. */
export function requiredTokensOption(what: string): OptionSpec {
  return { type: 'string', multiple: true, value: '<token>', description: `Require this bearer token ${what}`, env: 'AGORA_TOKENS' };
}

/** `--model <model>`: the Claude model (`AGORA_MODEL`); `what` says what it does in this command. */
export function modelOption(what: string): OptionSpec {
  return { type: 'string', value: '<model>', description: what, env: 'AGORA_MODEL' };
}

/** `--port` and `--host` of a command that listens (`AGORA_HOST`, loopback by default). */
export function listenOptions(portEnv: string, defaultPort: number): { port: OptionSpec; host: OptionSpec } {
  return {
    port: { type: 'string', short: 'p', value: '<port>', description: 'Port to listen on (0: any free port)', env: portEnv, default: String(defaultPort) },
    host: { type: 'string', value: '<host>', description: 'Address to listen on', env: 'AGORA_HOST', default: '127.0.0.1' },
  };
}

/** `--store <memory|redis://…>`: where a command's state lives (`memory` by default). */
export function storeOption(description: string, env: string): OptionSpec {
  return { type: 'string', value: '<memory|redis://host:port/db>', description, env, default: 'memory' };
}

/** `--rate-limit <requests/minute>` of a server. */
export const RATE_LIMIT_OPTION: OptionSpec = { type: 'string', value: '<requests/minute>', description: 'Per-client request limit', env: 'AGORA_RATE_LIMIT' };

/** `--cors-origin <origin>` (repeatable or comma-separated): web origins allowed to call a server from a browser. */
export const CORS_ORIGIN_OPTION: OptionSpec = {
  type: 'string',
  multiple: true,
  value: '<origin>',
  description: 'Let web pages of this origin (https://app.example) make state-changing requests from a browser; without it, cross-site requests are refused',
  env: 'AGORA_CORS_ORIGINS',
};

/** The origins of `--cors-origin` (declared by {@link CORS_ORIGIN_OPTION}), split at commas. */
export function corsOrigins(args: ParsedArgs): string[] {
  const values = (args.values['cors-origin'] as string[] | undefined) ?? [];
  return values.flatMap((value) => value.split(',')).map((value) => value.trim().replace(/\/+$/, '')).filter((value) => value !== '');
}
