import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { silentLogger } from '../log.js';
import { parseDocument } from '../protocol/document.js';
import type { JsonValue } from '../schemas.js';
import { Sender, type QueryResult, type SenderConversation, type StreamQueryOptions } from '../sender/sender.js';
import { fileArgument, urlArgument } from './_arguments.js';
import { defineCommand, printJson, requiredPositional, stringOption, timeoutMs, timeoutOption, UsageError } from './_command.js';
import { AGENT_TOKEN_OPTION, agentToken, jsonOption, wantsJson } from './_options.js';

/** A body as typed: JSON when it parses, else the text itself. */
export function parseBody(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return text;
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

function printReply(result: QueryResult, json: boolean): void {
  if (json) printJson(result);
  else if (typeof result.body === 'string') process.stdout.write(`${result.body}\n`);
  else process.stdout.write(`${JSON.stringify(result.body, null, 2)}\n`);
}

/** One turn per line until an empty line or end of input; a prompt when stdin is a terminal. */
async function converseLines(conversation: SenderConversation, json: boolean): Promise<void> {
  const interactive = process.stdin.isTTY === true;
  const lines = createInterface({ input: process.stdin, ...(interactive ? { output: process.stderr, prompt: '> ' } : {}), terminal: interactive });
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
async function printStream(sender: Sender, url: string, options: StreamQueryOptions, json: boolean): Promise<void> {
  let printed = '';
  for await (const event of sender.stream(url, options)) {
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

/** `agora send <url> [body]`: one query, or a conversation with `--multiround`. */
export const command = defineCommand({ name: 'send', summary: 'Send a query to an agent and print the reply body', usage: 'agora send <url> [body|-] [--protocol <file>] [--multiround] [--stream] [--token <token>] [--json] [--timeout <s>]' }, {
  options: {
    protocol: { type: 'string', value: '<file>', description: 'Query under this protocol document (default: natural language)' },
    multiround: { type: 'boolean', description: 'Hold a conversation: each line typed (or read from stdin) is a turn; an empty line or Ctrl-D ends it' },
    json: jsonOption('Print the whole reply {body, conversationId?, conversationExpires?} as JSON'),
    stream: { type: 'boolean', description: 'Ask for a streamed reply and print its text as it comes (progress as JSON lines on stderr)' },
    token: AGENT_TOKEN_OPTION,
    timeout: timeoutOption(30),
  },
  details: [
    'The body is sent as JSON when it parses as JSON, else as a string; `-` reads it from stdin.',
    'Examples:',
    '  agora send http://localhost:3000 "What is 3 miles in km?"',
    '  agora send http://localhost:3000 \'{"value": 3, "from": "mi", "to": "km"}\' --protocol protocols/unit-conversion.md',
    '  agora send http://localhost:3000 --multiround',
    '  agora send http://localhost:3000 "Tell me a story" --stream',
  ].join('\n'),
  async run(args) {
    const url = urlArgument(requiredPositional(args, 0, '<url>'));
    const bodyArgument = args.positionals[1];
    if (args.positionals.length > 2) throw new UsageError('too many arguments: quote the body');
    const multiround = args.values.multiround === true;
    const stream = args.values.stream === true;
    if (stream && multiround) throw new UsageError('--stream streams one query: it does not combine with --multiround');
    const json = wantsJson(args);
    if (bodyArgument === undefined && !multiround) throw new UsageError('missing [body] (or `-` to read it from stdin)');
    const timeout = timeoutMs(args, 30);
    const file = stringOption(args, 'protocol');
    const protocol = file ? parseDocument(await readFile(await fileArgument(file, '--protocol')), file) : undefined;
    const sender = new Sender({ timeoutMs: timeout, logger: silentLogger, llm: null, ...agentToken(args) });
    if (!multiround) {
      const body = bodyArgument === '-' ? parseBody(await readStdin()) : parseBody(bodyArgument!);
      if (stream) {
        await printStream(sender, url, { body, ...(protocol ? { protocol } : {}) }, json);
        return 0;
      }
      printReply(await sender.query(url, { body, ...(protocol ? { protocol } : {}) }), json);
      return 0;
    }
    const conversation = sender.conversation(url, protocol);
    try {
      if (bodyArgument !== undefined && bodyArgument !== '-') printReply(await conversation.send(parseBody(bodyArgument)), json);
      await converseLines(conversation, json);
    } catch (error) {
      // The turn's failure is what the user needs to see, not a failure to close after it.
      await conversation.close().catch(() => undefined);
      throw error;
    }
    await conversation.close();
    return 0;
  },
});
