// Internal: what the commands that talk to a hub share (`chain`, `resume`, `route`, `runs`, `hub register`): the
// `--hub` option and its client, `--json`, and the options of a chain.
import type { HubClient } from '../hub/client.js';
import type { TokenSource } from '../net/token-source.js';
import {
  defineCommand,
  numberOption,
  stringOption,
  type Command,
  type CommandBody,
  type CommandMeta,
  type OptionSpec,
  type ParsedArgs,
} from './_command.js';
import { CLIENT_CREDENTIALS_OPTIONS, clientCredentials, TOKEN_ISSUER_OPTION } from './_credentials.js';
import { HUB_TOKEN_OPTION, jsonOption } from './_options.js';

/** `--hub <url>`: the hub a command talks to (`AGORA_HUB`; the client's default otherwise). */
export function hubOption(description = 'The hub'): OptionSpec {
  return { type: 'string', value: '<url>', description, env: 'AGORA_HUB' };
}

/** The client of the hub `--hub` names, with `--hub-token` or client credentials (for the hub commands). */
export async function hubClient(args: ParsedArgs): Promise<HubClient> {
  const { HubClient } = await import('../hub/client.js');
  const url = stringOption(args, 'hub');
  const token = stringOption(args, 'hub-token');
  const tokenSource = url === undefined ? undefined : clientCredentials(args, url);
  return new HubClient({ url, token, ...(tokenSource ? { tokenSource } : {}) });
}

/** A hub command's body as declared: its own options, and what its `--json` prints. */
export type HubCommandBody = CommandBody & { json: string };

/** A command that talks to a hub: `--hub` and `--hub-token` first, its own options, `--json` last (so every hub command's help reads alike). */
export function hubCommand(meta: CommandMeta, { options, json, ...body }: HubCommandBody): Command {
  return defineCommand(meta, {
    ...body,
    options: {
      hub: hubOption(),
      'hub-token': HUB_TOKEN_OPTION,
      ...CLIENT_CREDENTIALS_OPTIONS,
      'auth-issuer': TOKEN_ISSUER_OPTION,
      ...options,
      json: { ...jsonOption(json), default: false },
    },
  });
}

/** `--max-hops`, `--timeout`, `--roar-secret` and `--allow-private-agents` of the commands that run a chain. */
export function chainOptions(
  maxHopsDescription: string,
  defaultHops?: number,
): Record<'max-hops' | 'timeout' | 'roar-secret' | 'allow-private-agents', OptionSpec> {
  return {
    'allow-private-agents': {
      type: 'boolean',
      description:
        "Let hops reach agents on loopback and private networks (checked at every connection, as the hub's --allow-private-agents)",
      env: 'AGORA_ALLOW_PRIVATE_SOURCES',
      default: false,
    },
    'roar-secret': {
      type: 'string',
      value: '<secret>',
      description: 'HMAC secret shared with ROAR agents of the chain (default: sign with a fresh Ed25519 key)',
      env: 'AGORA_ROAR_SECRET',
    },
    'max-hops': {
      type: 'string',
      value: '<n>',
      description: maxHopsDescription,
      ...(defaultHops === undefined ? {} : { default: String(defaultHops) }),
    },
    timeout: {
      type: 'string',
      value: '<seconds>',
      description: 'Time each agent has to answer',
      env: 'AGORA_TIMEOUT',
      default: '60',
    },
  };
}

/**
 * `--max-hops`, `--timeout`, `--allow-private-agents` (declared by {@link chainOptions}), checked: the hop cap, each
 * hop's time in ms, and whether hops may reach private addresses.
 */
export function chainLimits(args: ParsedArgs): {
  maxHops: number | undefined;
  hopTimeoutMs: number;
  roarSecret?: string;
  allowPrivateAgents: boolean;
  /** The hops' tokens: the client credentials given, a token for each agent's origin. */
  tokenSource?: TokenSource;
} {
  const roarSecret =
    typeof args.values['roar-secret'] === 'string' && args.values['roar-secret'] !== ''
      ? args.values['roar-secret']
      : undefined;
  const tokenSource = clientCredentials(args, 'each-origin');
  return {
    maxHops: numberOption(args, 'max-hops', { min: 1, integer: true }),
    hopTimeoutMs: (numberOption(args, 'timeout', { min: 0.001 }) ?? 60) * 1000,
    ...(roarSecret ? { roarSecret } : {}),
    allowPrivateAgents: args.values['allow-private-agents'] === true,
    ...(tokenSource ? { tokenSource } : {}),
  };
}
