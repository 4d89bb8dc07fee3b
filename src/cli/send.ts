import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { silentLogger } from '../log.js';
import { parseDocument } from '../protocol/document.js';
import type { JsonValue } from '../schemas.js';
import { isAgoraError } from '../errors.js';
import type { ProtocolDocument } from '../protocol/document.js';
import {
  askPeer,
  detectPeerKind,
  PEER_KINDS,
  peerConversation,
  streamPeer,
  type ForeignKind,
  type PeerKind,
  type PeerOptions,
} from '../bindings/peers.js';
import { PROBES } from '../bindings/index.js';
import { Sender, type QueryResult, type StreamQueryOptions } from '../sender/sender.js';
import type { SenderStreamEvent } from '../sender/stream.js';
import { fileArgument, urlArgument } from './_arguments.js';
import {
  defineCommand,
  printJson,
  requiredPositional,
  stringOption,
  timeoutMs,
  timeoutOption,
  UsageError,
  type ParsedArgs,
} from './_command.js';
import { CLIENT_CREDENTIALS_OPTIONS, clientCredentials, TOKEN_ISSUER_OPTION } from './_credentials.js';
import { AGENT_TOKEN_OPTION, agentToken, jsonOption, wantsJson } from './_options.js';

/** The origins of `--allow-origin` (repeatable or comma-separated), each checked to be one. */
function originsOption(args: ParsedArgs): string[] {
  return ((args.values['allow-origin'] as string[] | undefined) ?? [])
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter((value) => value !== '')
    .map((value) => {
      if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol))
        throw new UsageError(
          `--allow-origin takes an http(s) origin (https://api.example), got ${JSON.stringify(value)}`,
        );
      return new URL(value).origin;
    });
}

/**
 * A body as typed: JSON when it parses, else the text itself; text that looks like JSON (`{…}`, `[…]`) but does not
 * parse is sent as text all the same (a protocol may take any text), and a line on stderr says so and why.
 */
export function parseBody(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch (error) {
    if (/^\s*[[{]/.test(text))
      process.stderr.write(
        `agora send: the body is not valid JSON (${(error as Error).message}): sending it as text; fix the JSON to send JSON\n`,
      );
    return text;
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

function printReply(result: QueryResult, json: boolean): void {
  if (json) printJson(result);
  else if (typeof result.body === 'string') process.stdout.write(`${result.body}\n`);
  else process.stdout.write(`${JSON.stringify(result.body, null, 2)}\n`);
}

/** One turn per line until an empty line or end of input; a prompt when stdin is a terminal. */
async function converseLines(
  conversation: { send(body: JsonValue): Promise<QueryResult> },
  json: boolean,
): Promise<void> {
  const interactive = process.stdin.isTTY === true;
  const lines = createInterface({
    input: process.stdin,
    ...(interactive ? { output: process.stderr, prompt: '> ' } : {}),
    terminal: interactive,
  });
  try {
    if (interactive) lines.prompt();
    for await (const line of lines) {
      // An empty line ends a conversation typed by hand; piped input may carry blank lines between turns.
      if (line.trim() === '') {
        if (interactive) break;
        continue;
      }
      printReply(await conversation.send(parseBody(line)), json);
      if (interactive) lines.prompt();
    }
  } finally {
    lines.close();
  }
}

/** Prints a streamed reply as it comes: text pieces to stdout, other pieces (progress) as JSON lines to stderr. */
async function printStream(events: AsyncIterable<SenderStreamEvent>, json: boolean): Promise<void> {
  let printed = '';
  for await (const event of events) {
    if (event.type === 'done') {
      // Text streamed whole needs only its line end; anything else is printed as without streaming.
      if (!json && typeof event.result.body === 'string' && printed === event.result.body) process.stdout.write('\n');
      else printReply(event.result, json);
    } else if (typeof event.delta === 'string') {
      if (!json) process.stdout.write(event.delta);
      printed += event.delta;
    } else process.stderr.write(`${JSON.stringify(event.delta)}\n`);
  }
}

/** Whether an Agora query failed because the agent does not speak Agora there (nothing was done): worth asking what it speaks. */
function notAgora(error: unknown): boolean {
  return (
    isAgoraError(error) &&
    error.code === 'PEER_FAILURE' &&
    (error.status === 404 || error.status === 405 || /not an Agora reply|not JSON/.test(error.message))
  );
}

/** One query to an agent of a foreign kind (ROAR, OAP, A2A…), streamed or not. */
async function sendForeign(
  kind: ForeignKind,
  url: string,
  body: JsonValue,
  protocol: ProtocolDocument | undefined,
  stream: boolean,
  json: boolean,
  options: PeerOptions,
): Promise<void> {
  const query = { body, ...(protocol ? { protocol } : {}) };
  if (stream) await printStream(streamPeer(kind, url, query, options), json);
  else printReply(await askPeer(kind, url, query, options), json);
}

/** `agora send <url> [body]`: one query, or a conversation with `--multiround`. */
export const command = defineCommand(
  {
    name: 'send',
    summary: 'Send a query to an agent and print the reply body',
    usage: `agora send <url> [body|-] [--as ${PEER_KINDS.join('|')}] [--protocol <file>] [--multiround] [--stream] [--token <token> | --client-id <id> --token-url <url>] [--allow-origin <origin>] [--roar-secret <secret>] [--json] [--timeout <s>]`,
  },
  {
    options: {
      as: {
        type: 'string',
        value: '<protocol>',
        description: `Speak ${PEER_KINDS.slice(0, -1).join(', ')} or ${PEER_KINDS.at(-1)} to the agent (default: Agora, or what the agent serves when it does not answer Agora)`,
      },
      'roar-secret': {
        type: 'string',
        value: '<secret>',
        description:
          'HMAC secret shared with a ROAR agent: messages are signed with it and replies must be (default: sign with a fresh Ed25519 key; env AGORA_ROAR_SECRET)',
      },
      protocol: {
        type: 'string',
        value: '<file>',
        description: 'Query under this protocol document (default: natural language)',
      },
      multiround: {
        type: 'boolean',
        description:
          'Hold a conversation: each line typed (or read from stdin) is a turn; an empty line or Ctrl-D ends it',
      },
      json: jsonOption('Print the whole reply {body, conversationId?, conversationExpires?} as JSON'),
      stream: {
        type: 'boolean',
        description: 'Ask for a streamed reply and print its text as it comes (progress as JSON lines on stderr)',
      },
      token: AGENT_TOKEN_OPTION,
      ...CLIENT_CREDENTIALS_OPTIONS,
      'auth-issuer': TOKEN_ISSUER_OPTION,
      'allow-origin': {
        type: 'string',
        multiple: true,
        value: '<origin>',
        description:
          "Let the agent's card send the query (and the token) to this other origin (https://api.example); without it such a card is refused",
      },
      timeout: timeoutOption(30),
    },
    details: [
      'The body is sent as JSON when it parses as JSON, else as a string; `-` reads it from stdin.',
      'Examples:',
      '  agora send http://localhost:3000 "What is 3 miles in km?"',
      '  agora send http://localhost:3000 \'{"value": 3, "from": "mi", "to": "km"}\' --protocol protocols/unit-conversion.md',
      '  agora send http://localhost:3000 --multiround',
      '  agora send http://localhost:3000 "Tell me a story" --stream',
      '  agora send http://localhost:8089 "Review this diff" --as roar --roar-secret "$SECRET"',
      '  agora send http://localhost:41241 "Hello" --as a2a --stream',
      '  AGORA_CLIENT_SECRET=… agora send https://agent.example "Hi" --client-id cli --auth-issuer https://id.test',
      'Without --as, an agent that does not answer Agora (404, 405, or not an Agora reply) is asked what it serves',
      `(GET /wellknown, then ${PROBES.map((probe) => probe.path).join(', ')}, in that order)`,
      'and the query goes again in its protocol.',
    ].join('\n'),
    async run(args) {
      const url = urlArgument(requiredPositional(args, 0, '<url>'));
      const bodyArgument = args.positionals[1];
      if (args.positionals.length > 2) throw new UsageError('too many arguments: quote the body');
      const multiround = args.values.multiround === true;
      const stream = args.values.stream === true;
      if (stream && multiround)
        throw new UsageError('--stream streams one query: it does not combine with --multiround');
      const json = wantsJson(args);
      if (bodyArgument === undefined && !multiround)
        throw new UsageError('missing [body] (or `-` to read it from stdin)');
      const timeout = timeoutMs(args, 30);
      const file = stringOption(args, 'protocol');
      const protocol = file ? parseDocument(await readFile(await fileArgument(file, '--protocol')), file) : undefined;
      const as = stringOption(args, 'as');
      if (as !== undefined && !PEER_KINDS.includes(as as PeerKind))
        throw new UsageError(`--as takes one of ${PEER_KINDS.join(', ')}`);
      const secret = stringOption(args, 'roar-secret') ?? process.env.AGORA_ROAR_SECRET;
      // The token belongs to the URL's origin, and to the origins the user allowed a card to name.
      const allowOrigins = originsOption(args);
      const tokenOrigin = [new URL(url).origin, ...allowOrigins];
      const tokenSource = clientCredentials(args, url);
      const peerOptions = {
        timeoutMs: timeout,
        ...agentToken(args),
        ...(tokenSource ? { tokenSource } : {}),
        tokenOrigin,
        allowOrigins,
        ...(secret ? { secret } : {}),
      };
      const sender = new Sender({
        timeoutMs: timeout,
        logger: silentLogger,
        llm: null,
        ...agentToken(args),
        ...(tokenSource ? { tokenSource } : {}),
        tokenOrigin,
      });
      if (!multiround) {
        const body = bodyArgument === '-' ? parseBody(await readStdin()) : parseBody(bodyArgument!);
        if (as !== undefined && as !== 'agora') {
          await sendForeign(as as ForeignKind, url, body, protocol, stream, json, peerOptions);
          return 0;
        }
        const query: StreamQueryOptions = { body, ...(protocol ? { protocol } : {}) };
        try {
          if (stream) await printStream(sender.stream(url, query), json);
          else printReply(await sender.query(url, query), json);
        } catch (error) {
          // Not an Agora agent: ask it what it speaks, and send again in that protocol (nothing was done the first
          // time).
          const kind = as === undefined && notAgora(error) ? await detectPeerKind(url, peerOptions) : undefined;
          if (kind === undefined || kind === 'agora') throw error;
          await sendForeign(kind, url, body, protocol, stream, json, peerOptions);
        }
        return 0;
      }
      const kind = as ?? (await detectPeerKind(url, peerOptions)) ?? 'agora';
      const conversation =
        kind === 'agora'
          ? sender.conversation(url, protocol)
          : peerConversation(kind as ForeignKind, url, protocol, peerOptions);
      try {
        if (bodyArgument !== undefined && bodyArgument !== '-')
          printReply(await conversation.send(parseBody(bodyArgument)), json);
        await converseLines(conversation, json);
      } catch (error) {
        // The turn's failure is what the user needs to see, not a failure to close after it.
        await conversation.close().catch(() => undefined);
        throw error;
      }
      await conversation.close();
      return 0;
    },
  },
);
