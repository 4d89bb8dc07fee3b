// Internal: the options several commands declare, written once so their flags, environment variables and help read
// the same everywhere, with the code that reads them.
import { ACCESS_KINDS, OAuthResource, type AccessKind } from '../edge/oauth.js';
import { isAgoraError } from '../errors.js';
import { chooseModel, isLlmProvider, LLM_PROVIDERS } from '../llm/choose.js';
import type { LanguageModel } from '../llm/model.js';
import { PROVIDERS } from '../llm/providers.js';
import { stringOption, UsageError, type OptionSpec, type ParsedArgs } from './_command.js';

/** `--json`: print `what` as JSON for scripts instead of lines for people. */
export function jsonOption(what: string): OptionSpec {
  return { type: 'boolean', description: what };
}

/** Whether `--json` (declared by {@link jsonOption}) was given. */
export function wantsJson(args: ParsedArgs): boolean {
  return args.values.json === true;
}

/** `--token <token>`: the bearer token sent to an agent that requires one. */
export const AGENT_TOKEN_OPTION: OptionSpec = {
  type: 'string',
  value: '<token>',
  description: 'Bearer token, for an agent that requires one',
  env: 'AGORA_TOKEN',
};

/** `--hub-token <token>`: the bearer token sent to a hub that requires one (never a server's own tokens). */
export const HUB_TOKEN_OPTION: OptionSpec = {
  type: 'string',
  value: '<token>',
  description: 'Bearer token, for a hub that requires one',
  env: 'AGORA_HUB_TOKEN',
};

/** The headers of `--token` (declared by {@link AGENT_TOKEN_OPTION}), for a Sender or a check. */
export function agentToken(args: ParsedArgs): { token?: string } {
  const token = stringOption(args, 'token');
  return token ? { token } : {};
}

/** `--token <token>` (repeatable): the bearer tokens a server requires; `what` says for which routes. */
export function requiredTokensOption(what: string): OptionSpec {
  return {
    type: 'string',
    multiple: true,
    value: '<token>',
    description: `Require this bearer token ${what}`,
    env: 'AGORA_TOKENS',
  };
}

/** `--auth-issuer`, `--auth-audience`, `--auth-scope`: a server also takes an OAuth 2.1 issuer's access tokens. */
export const AUTH_OPTIONS: Record<'auth-issuer' | 'auth-audience' | 'auth-scope', OptionSpec> = {
  'auth-issuer': {
    type: 'string',
    value: '<url>',
    description: 'Also take JWT access tokens of this OAuth 2.1 issuer (keys found by RFC 8414 / OpenID discovery)',
    env: 'AGORA_AUTH_ISSUER',
  },
  'auth-audience': {
    type: 'string',
    value: '<url>',
    description: "This server's resource URL, the audience its tokens must carry (default: --public-url)",
    env: 'AGORA_AUTH_AUDIENCE',
  },
  'auth-scope': {
    type: 'string',
    multiple: true,
    value: '<kind=scope>',
    description: 'Scope a kind of request needs, kind read, query or admin (repeatable; a bare scope: every kind)',
    env: 'AGORA_AUTH_SCOPES',
  },
};

/** The OAuth resource server of `--auth-issuer` (declared by {@link AUTH_OPTIONS}), or undefined without one. */
export function oauthOption(args: ParsedArgs, publicUrl: string | undefined): OAuthResource | undefined {
  const issuer = stringOption(args, 'auth-issuer');
  const scopeArgs = (args.values['auth-scope'] as string[] | undefined) ?? [];
  const audienceArg = stringOption(args, 'auth-audience');
  if (issuer === undefined) {
    if (scopeArgs.length > 0 || audienceArg !== undefined)
      throw new UsageError('--auth-audience and --auth-scope need --auth-issuer');
    return undefined;
  }
  const audience = audienceArg ?? publicUrl;
  if (audience === undefined)
    throw new UsageError('--auth-issuer needs the resource URL its tokens name: set --auth-audience or --public-url');
  const scopes: Partial<Record<AccessKind, string[]>> = {};
  for (const entry of scopeArgs) {
    const [kind, scope] = entry.includes('=') ? entry.split('=', 2) : [undefined, entry];
    if (kind !== undefined && !(ACCESS_KINDS as readonly string[]).includes(kind))
      throw new UsageError(`--auth-scope: unknown kind ${JSON.stringify(kind)} (known: ${ACCESS_KINDS.join(', ')})`);
    if (!scope || /\s/.test(scope)) throw new UsageError(`--auth-scope: ${JSON.stringify(entry)} names no scope`);
    for (const each of kind === undefined ? ACCESS_KINDS : [kind as AccessKind]) (scopes[each] ??= []).push(scope);
  }
  try {
    return new OAuthResource({ issuer, audience, scopes });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** `--model <model>`: the model id (`AGORA_MODEL`); `what` says what it does in this command. */
export function modelOption(what: string): OptionSpec {
  return { type: 'string', value: '<model>', description: what, env: 'AGORA_MODEL' };
}

/** `--llm`, `--model` and `--llm-base-url`: which provider and model answer; `what` says what the model does here. */
export function llmOptions(what: string): Record<'llm' | 'model' | 'llm-base-url', OptionSpec> {
  return {
    llm: {
      type: 'string',
      value: `<${LLM_PROVIDERS.join('|')}>`,
      description:
        'LLM provider (default: the one whose API key is set, Anthropic first; offline: a scripted demo model, no key)',
      env: 'AGORA_LLM',
    },
    model: modelOption(what),
    'llm-base-url': {
      type: 'string',
      value: '<url>',
      description: `Base URL of the LLM API, e.g. http://localhost:11434/v1 for Ollama (${BASE_URL_ENV.join(' or ')})`,
    },
  };
}

// The variables of the providers' endpoints, as `--llm-base-url` names them.
const BASE_URL_ENV = PROVIDERS.flatMap((provider) => (provider.baseUrlEnv ? [provider.baseUrlEnv] : []));

/** The variables of the providers' keys, as help names them (`ANTHROPIC_API_KEY or OPENAI_API_KEY`). */
export const KEY_ENV = PROVIDERS.flatMap((provider) => provider.env.filter((name) => name.endsWith('_API_KEY')));

/** The LLM `--llm`, `--model` and `--llm-base-url` (declared by {@link llmOptions}) and the environment choose, if any. */
export async function chooseLlm(args: ParsedArgs): Promise<LanguageModel | undefined> {
  const provider = stringOption(args, 'llm')?.trim().toLowerCase();
  if (provider !== undefined && !isLlmProvider(provider))
    throw new UsageError(`--llm must be one of ${LLM_PROVIDERS.join(', ')}, got ${JSON.stringify(provider)}`);
  const model = stringOption(args, 'model');
  return chooseModel({ provider, model, baseUrl: stringOption(args, 'llm-base-url') }, process.env);
}

/** How a banner names the LLM: `openai gpt-4.1-mini`, `offline offline-demo (demo: …)`, or `none`. */
export function llmLabel(llm: LanguageModel | undefined): string {
  if (!llm) return 'none';
  const demo = llm.provider === 'offline' ? ' (demo: scripted answers, no network, not a real LLM)' : '';
  return `${llm.provider ?? 'custom'} ${llm.model}${demo}`;
}

/** Where a server of the CLI listens unless `--host` says otherwise: loopback, this machine only. */
export const LOOPBACK = '127.0.0.1';

/** `--host` (declared by {@link listenOptions}). */
export function hostOf(args: ParsedArgs): string {
  return stringOption(args, 'host') ?? LOOPBACK;
}

/** `--port` and `--host` of a command that listens (`AGORA_HOST`, loopback by default). */
export function listenOptions(portEnv: string, defaultPort: number): { port: OptionSpec; host: OptionSpec } {
  return {
    port: {
      type: 'string',
      short: 'p',
      value: '<port>',
      description: 'Port to listen on (0: any free port)',
      env: portEnv,
      default: String(defaultPort),
    },
    host: {
      type: 'string',
      value: '<host>',
      description: 'Address to listen on',
      env: 'AGORA_HOST',
      default: LOOPBACK,
    },
  };
}

/** `--store <memory|redis://…>`: where a command's state lives, `fallback` by default. */
export function storeOption(description: string, env: string, fallback: string): OptionSpec {
  return {
    type: 'string',
    value: '<memory|redis[s]://…|redis[s]-cluster://…|redis[s]-sentinel://…>',
    description,
    env,
    default: fallback,
  };
}

/** The flags of a Redis store's connection, each a query parameter of the `--store` URL by another name. */
export const STORE_CONNECTION_OPTIONS: Record<string, OptionSpec> = {
  'store-ca': {
    type: 'string',
    value: '<file>',
    description: 'CA certificates (PEM) a rediss:// store is verified with (default: the system CAs)',
    env: 'AGORA_STORE_CA',
  },
  'store-wait-replicas': {
    type: 'string',
    value: '<count>',
    description:
      "Replicas a turn's write must reach before it is answered (Redis WAIT, 0-16; default 1 on a cluster or Sentinel, else 0)",
    env: 'AGORA_STORE_WAIT_REPLICAS',
  },
  'store-wait-ms': {
    type: 'string',
    value: '<ms>',
    description: 'How long a write waits for its replicas before the request fails with 503 (1-1500, default 500)',
    env: 'AGORA_STORE_WAIT_MS',
  },
};

/** The `--store` URL with {@link STORE_CONNECTION_OPTIONS} folded into its query (what the URL sets itself wins). */
export function storeOf(args: ParsedArgs): string | undefined {
  const store = stringOption(args, 'store');
  if (store === undefined || store === 'memory') return store;
  const mark = store.indexOf('?');
  const query = new URLSearchParams(mark < 0 ? '' : store.slice(mark + 1));
  const flags = { ca: 'store-ca', waitReplicas: 'store-wait-replicas', waitMs: 'store-wait-ms' } as const;
  for (const [parameter, flag] of Object.entries(flags)) {
    const value = stringOption(args, flag);
    if (value !== undefined && !query.has(parameter)) query.set(parameter, value);
  }
  const rest = query.toString();
  return `${mark < 0 ? store : store.slice(0, mark)}${rest ? `?${rest}` : ''}`;
}

/** A bad `--store` URL (the library's `store: …` refusal) as the usage error it is: `--store must be …`. */
export function storeUsageError(error: unknown): never {
  // The library names its `store` option; here the user typed `--store`.
  if (isAgoraError(error) && error.code === 'INVALID_ARGUMENT' && error.message.startsWith('store: '))
    throw new UsageError(`--${error.message.replace(/^store: must/, 'store must')}`);
  throw error;
}

/** `--rate-limit <requests/minute>` of a server. */
export const RATE_LIMIT_OPTION: OptionSpec = {
  type: 'string',
  value: '<requests/minute>',
  description: 'Per-client request limit',
  env: 'AGORA_RATE_LIMIT',
};

/** `--cors-origin <origin>` (repeatable or comma-separated): web origins allowed to call a server from a browser. */
export const CORS_ORIGIN_OPTION: OptionSpec = {
  type: 'string',
  multiple: true,
  value: '<origin>',
  description:
    'Let web pages of this origin (https://app.example) make state-changing requests from a browser; without it, cross-site requests are refused',
  env: 'AGORA_CORS_ORIGINS',
};

/** The origins of `--cors-origin` (declared by {@link CORS_ORIGIN_OPTION}), split at commas. */
export function corsOrigins(args: ParsedArgs): string[] {
  const values = (args.values['cors-origin'] as string[] | undefined) ?? [];
  return values
    .flatMap((value) => value.split(','))
    .map((value) => value.trim().replace(/\/+$/, ''))
    .filter((value) => value !== '');
}

/** `--trace`: OpenTelemetry traces sent by OTLP, also without an endpoint variable (then OTLP's default, :4318). */
export const TRACE_OPTION: OptionSpec = {
  type: 'boolean',
  description:
    'Send OpenTelemetry traces by OTLP/HTTP (on by itself when OTEL_EXPORTER_OTLP_ENDPOINT is set; default endpoint http://localhost:4318)',
  default: false,
};

/** `--allowed-host <name>` (repeatable or comma-separated): host names a server answers beside loopback and IPs. */
export const ALLOWED_HOST_OPTION: OptionSpec = {
  type: 'string',
  multiple: true,
  value: '<name>',
  description:
    'Answer requests for this host name (agent.example, or name:port; * for any); without a token, other names get 421 (DNS rebinding)',
  env: 'AGORA_ALLOWED_HOSTS',
};

/** The names of `--allowed-host` (declared by {@link ALLOWED_HOST_OPTION}), split at commas; undefined when none. */
export function allowedHosts(args: ParsedArgs): string[] | undefined {
  const values = ((args.values['allowed-host'] as string[] | undefined) ?? [])
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter((value) => value !== '');
  return values.length > 0 ? values : undefined;
}
