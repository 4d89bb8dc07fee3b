// What the fake LLM APIs share: a loopback server, the reply script (consumed in order, then a fallback), the
// requests recorded, and the usage totals. Each fake (fake-anthropic.ts, fake-openai.ts) speaks its own wire.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { credential, quarter } from './_fake-request.js';
import type { StreamPacing } from './_fake-stream.js';

/** What a fake answers to one request: text, tool calls, an error status, a stall, or a function of the request. */
export type FakeReply =
  | string
  | {
      text?: string;
      toolUse?: { name: string; input: unknown; id?: string }[];
      /** Token counts to report (either spelling); the fake's token model fills what is missing. */
      usage?: { input_tokens?: number; output_tokens?: number; inputTokens?: number; outputTokens?: number };
      /** The stop reason as the fake's wire spells it (default: the end of a turn, or a tool call). */
      stopReason?: string;
      /** How the text is streamed to a client that asked for a stream: its pieces and the waits before each. */
      stream?: StreamPacing;
    }
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { stall: true }
  | ((request: FakeRequest) => FakeReply | Promise<FakeReply>);

/** One request a fake received: the parsed JSON body, the headers, and the texts tests usually match on. */
export type FakeRequest = {
  /** The parsed JSON request as the wire has it: model, system or messages, tools, stream... */
  body: any;
  headers: Record<string, string | string[] | undefined>;
  /** The credential the client sent: `x-api-key`, or an `Authorization: Bearer` token. */
  apiKey?: string;
  /** The system prompt as text. */
  system: string;
  /** The text of the last user turn: its text, or the results of the tools the model called. */
  lastUserText: string;
  /** Messages of the conversation so far, the system prompt not counted (1 for a first question). */
  turns: number;
  /** Resolves when the client closes the connection before the reply was complete (an aborted call). */
  closed: Promise<void>;
};

/** Options of a fake's `start`. */
export type FakeLlmOptions = {
  /** A script of replies, consumed in order. */
  replies?: FakeReply[];
  /** Used when the script is exhausted (default: status 500 saying the script ran out). */
  fallback?: FakeReply;
  /** Usage a reply doesn't give: 'fixed' (input 10, output 5; default) or 'chars' (ceil(chars / 4) of the request's and the reply's texts). */
  tokenModel?: 'fixed' | 'chars';
};

/** A scripted reply that is a message (text and tool calls). */
export type MessageReply = Extract<FakeReply, { text?: string }>;
/** A scripted reply that is an error status. */
export type StatusReply = Extract<FakeReply, { status: number }>;

/** The wire a fake speaks: its one path, its checks, its texts, and how it writes replies and errors. */
export type FakeWire = {
  /** Its name in error messages, e.g. `FakeOpenAI`. */
  name: string;
  /** The path of its one endpoint, e.g. `/v1/messages`. */
  path: string;
  /** The first check the real API makes that a request fails, as its message. */
  invalid(body: any): string | undefined;
  /** The system prompt, the last user turn's text and the count of messages of a request. */
  texts(body: any): { system: string; lastUserText: string; turns: number };
  /** Writes an error of the wire's shape. */
  sendError(response: ServerResponse, status: number, message: string): void;
  /** Writes a scripted status (its body, else the wire's error for that status). */
  sendStatus(response: ServerResponse, reply: StatusReply): void;
  /** Writes a message reply, plain or streamed as the request asked; returns the tokens it reported. */
  sendMessage(
    response: ServerResponse,
    body: any,
    reply: MessageReply,
    ids: (prefix: string) => string,
  ): Promise<{ inputTokens: number; outputTokens: number }>;
};

// The default fallback: a 500 whose message says the script ran out.
const EXHAUSTED: StatusReply = { status: 500 };

/** Starts a server on 127.0.0.1 on a free port. */
export async function listenOnLoopback(): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

/** The script, the recorded requests and the totals of a fake, serving one wire on a loopback server. */
export class FakeLlmServer {
  /** Every request received, in order. */
  readonly requests: FakeRequest[] = [];
  /** The server's origin, e.g. `http://127.0.0.1:53117`. */
  readonly origin: string;

  readonly #server: Server;
  readonly #wire: FakeWire;
  readonly #script: FakeReply[];
  #fallback: FakeReply;
  #ids = 0;
  #totals = { calls: 0, inputTokens: 0, outputTokens: 0 };

  constructor(server: Server, wire: FakeWire, options: FakeLlmOptions) {
    this.#server = server;
    this.#wire = wire;
    this.#script = [...(options.replies ?? [])];
    this.#fallback = options.fallback ?? EXHAUSTED;
    const { port } = server.address() as AddressInfo;
    this.origin = `http://127.0.0.1:${port}`;
    server.on('request', (request, response) => {
      this.#handle(request, response).catch((error: unknown) => {
        // A bug here must answer, not leave the client waiting.
        if (!response.headersSent) wire.sendError(response, 500, `${wire.name} failed: ${String(error)}`);
        else response.destroy();
      });
    });
  }

  /** Appends replies to the script. */
  push(...replies: FakeReply[]): void {
    this.#script.push(...replies);
  }

  /** Sets the reply used once the script is exhausted. */
  setFallback(reply: FakeReply): void {
    this.#fallback = reply;
  }

  /** Clears the script, the recorded requests and the totals (the fallback stays). */
  reset(): void {
    this.#script.length = 0;
    // Emptied in place, so a test holding `fake.requests` sees the reset.
    this.requests.length = 0;
    this.#totals = { calls: 0, inputTokens: 0, outputTokens: 0 };
  }

  /** The usage actually returned: successful message replies and their token counts. */
  totals(): { calls: number; inputTokens: number; outputTokens: number } {
    return { ...this.#totals };
  }

  /** Stops the server, closing stalled and idle sockets too. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
    await closed;
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const wire = this.#wire;
    const raw = await readBody(request);
    const path = new URL(request.url ?? '/', 'http://fake').pathname;
    if (request.method !== 'POST' || path !== wire.path)
      return wire.sendError(response, 404, `Not found: ${request.method} ${path}`);
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      return wire.sendError(response, 400, 'The request body is not valid JSON');
    }
    const closed = new Promise<void>((resolve) => response.once('close', () => response.writableFinished || resolve()));
    const recorded: FakeRequest = { body, headers: { ...request.headers }, ...wire.texts(body), closed };
    const apiKey = credential(request);
    if (apiKey !== undefined) recorded.apiKey = apiKey;
    this.requests.push(recorded);
    // The checks the real API makes first, so a mapping bug fails here as it would in production.
    const invalid = wire.invalid(body);
    if (invalid) return wire.sendError(response, 400, invalid);

    let reply = this.#script.length > 0 ? this.#script.shift()! : this.#fallback;
    try {
      // A function may compute another function; a bound keeps a mistaken self-reference from spinning.
      for (let depth = 0; typeof reply === 'function' && depth < 16; depth++) reply = await reply(recorded);
    } catch (error) {
      return wire.sendError(
        response,
        500,
        `${wire.name} reply function threw: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    if (typeof reply === 'function') throw new Error('reply functions nested too deeply');
    if (typeof reply === 'string') reply = { text: reply };
    // Held open until the client gives up or close() destroys the socket.
    if ('stall' in reply) return;
    if ('status' in reply) {
      if (reply === EXHAUSTED)
        return wire.sendError(
          response,
          500,
          `${wire.name}: the reply script ran out (push more replies or set a fallback)`,
        );
      return wire.sendStatus(response, reply);
    }
    const usage = await wire.sendMessage(
      response,
      body,
      reply,
      (prefix) => `${prefix}_fake${String(++this.#ids).padStart(8, '0')}`,
    );
    this.#totals.calls++;
    this.#totals.inputTokens += usage.inputTokens;
    this.#totals.outputTokens += usage.outputTokens;
  }
}

/** The tokens a reply reports: as scripted (either spelling), else the token model's count. */
export function replyUsage(
  reply: MessageReply,
  tokenModel: 'fixed' | 'chars',
  requestChars: () => number,
  replyChars: () => number,
): { inputTokens: number; outputTokens: number } {
  return {
    inputTokens:
      reply.usage?.inputTokens ?? reply.usage?.input_tokens ?? (tokenModel === 'chars' ? quarter(requestChars()) : 10),
    outputTokens:
      reply.usage?.outputTokens ?? reply.usage?.output_tokens ?? (tokenModel === 'chars' ? quarter(replyChars()) : 5),
  };
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

/** Writes a JSON body with a status. */
export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(typeof body === 'string' ? body : JSON.stringify(body));
}
