import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendStream, type ResponseBlock, type StreamPacing } from './_fake-stream.js';

export type { StreamPacing } from './_fake-stream.js';

/** What the fake answers to one request: text, tool calls, an error status, a stall, or a function of the request. */
export type FakeReply =
  | string
  | {
      text?: string;
      toolUse?: { name: string; input: unknown; id?: string }[];
      usage?: { input_tokens?: number; output_tokens?: number };
      stopReason?: string;
      /** How the text is streamed to a client that asked for a stream: its pieces and the waits before each. */
      stream?: StreamPacing;
    }
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { stall: true }
  | ((request: FakeRequest) => FakeReply | Promise<FakeReply>);

/** One request the fake received: the parsed JSON body, the headers, and the texts tests usually match on. */
export type FakeRequest = {
  /** The parsed JSON request: model, system, messages, tools, stream... */
  body: any;
  headers: Record<string, string | string[] | undefined>;
  /** The credential the client sent: `x-api-key`, or an `Authorization: Bearer` token (SDK 1.x sends the key that way). */
  apiKey?: string;
  /** The system prompt as text (text blocks joined). */
  system: string;
  /** The text of the last user message: its text blocks, or its tool_result contents. */
  lastUserText: string;
  /** Resolves when the client closes the connection before the reply was complete (an aborted call). */
  closed: Promise<void>;
};

/** Options of {@link FakeAnthropic.start}. */
export type FakeAnthropicOptions = {
  /** A script of replies, consumed in order. */
  replies?: FakeReply[];
  /** Used when the script is exhausted (default: status 500 saying the script ran out). */
  fallback?: FakeReply;
  /** Usage a reply doesn't give: 'fixed' (input 10, output 5; default) or 'chars' (ceil(chars / 4) of the system and message texts, and of the reply's text and tool inputs). */
  tokenModel?: 'fixed' | 'chars';
};

type MessageReply = Extract<FakeReply, { text?: string }>;
type StatusReply = Extract<FakeReply, { status: number }>;

const EXHAUSTED: FakeReply = { status: 500, body: { type: 'error', error: { type: 'api_error', message: 'FakeAnthropic: the reply script ran out (push more replies or set a fallback)' } } };

// The error `type` the real API pairs with each status, so the SDK builds the same error classes.
const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

/**
 * A fake Anthropic Messages API on loopback, scripted reply by reply, for tests that drive the real SDK.
 * @example
 * const fake = await FakeAnthropic.start({ replies: ['Hello'] });
 * const model = new AnthropicModel({ baseURL: fake.url, apiKey: 'test-key' });
 */
export class FakeAnthropic {
  /** Base URL for ANTHROPIC_BASE_URL or the SDK's `baseURL` (without `/v1`). */
  readonly url: string;
  /** Every request received, in order. */
  readonly requests: FakeRequest[] = [];

  readonly #server: Server;
  readonly #script: FakeReply[];
  readonly #tokenModel: 'fixed' | 'chars';
  #fallback: FakeReply;
  #ids = 0;
  #totals = { calls: 0, inputTokens: 0, outputTokens: 0 };

  private constructor(server: Server, options: FakeAnthropicOptions) {
    this.#server = server;
    this.#script = [...(options.replies ?? [])];
    this.#fallback = options.fallback ?? EXHAUSTED;
    this.#tokenModel = options.tokenModel ?? 'fixed';
    const { port } = server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
    server.on('request', (request, response) => {
      this.#handle(request, response).catch((error: unknown) => {
        // A bug here must answer, not leave the client waiting.
        if (!response.headersSent) sendJson(response, 500, errorBody('api_error', `FakeAnthropic failed: ${String(error)}`));
        else response.destroy();
      });
    });
  }

  /** Starts a fake on 127.0.0.1 on a free port. */
  static async start(options: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    return new FakeAnthropic(server, options);
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
    const raw = await readBody(request);
    const path = new URL(request.url ?? '/', 'http://fake').pathname;
    if (request.method !== 'POST' || path !== '/v1/messages') {
      sendJson(response, 404, errorBody('not_found_error', `Not found: ${request.method} ${path}`));
      return;
    }
    let body: any;
    try {
      body = JSON.parse(raw);
    } catch {
      sendJson(response, 400, errorBody('invalid_request_error', 'The request body is not valid JSON'));
      return;
    }
    const closed = new Promise<void>((resolve) => response.once('close', () => response.writableFinished || resolve()));
    const recorded: FakeRequest = { body, headers: { ...request.headers }, system: systemText(body?.system), lastUserText: lastUserText(body?.messages), closed };
    const apiKey = credential(request);
    if (apiKey !== undefined) recorded.apiKey = apiKey;
    this.requests.push(recorded);
    // The checks the real API makes first, so a mapping bug fails here as it would in production.
    const invalid = invalidRequest(body);
    if (invalid) {
      sendJson(response, 400, errorBody('invalid_request_error', invalid));
      return;
    }

    let reply = this.#script.length > 0 ? this.#script.shift()! : this.#fallback;
    try {
      // A function may compute another function; a bound keeps a mistaken self-reference from spinning.
      for (let depth = 0; typeof reply === 'function' && depth < 16; depth++) reply = await reply(recorded);
    } catch (error) {
      sendJson(response, 500, errorBody('api_error', `FakeAnthropic reply function threw: ${error instanceof Error ? error.message : String(error)}`));
      return;
    }
    if (typeof reply === 'function') throw new Error('reply functions nested too deeply');
    if (typeof reply === 'string') reply = { text: reply };
    // Held open until the client gives up or close() destroys the socket.
    if ('stall' in reply) return;
    if ('status' in reply) {
      sendStatus(response, reply);
      return;
    }
    await this.#sendMessage(response, body, reply);
  }

  async #sendMessage(response: ServerResponse, body: any, reply: MessageReply): Promise<void> {
    const content: ResponseBlock[] = [];
    if (reply.text !== undefined || !reply.toolUse?.length) content.push({ type: 'text', text: reply.text ?? '' });
    for (const call of reply.toolUse ?? []) {
      content.push({ type: 'tool_use', id: call.id ?? this.#nextId('toolu'), name: call.name, input: call.input ?? {} });
    }
    const usage = {
      input_tokens: reply.usage?.input_tokens ?? (this.#tokenModel === 'chars' ? quarter(requestChars(body)) : 10),
      output_tokens: reply.usage?.output_tokens ?? (this.#tokenModel === 'chars' ? quarter(replyChars(content)) : 5),
    };
    const message = {
      id: this.#nextId('msg'),
      type: 'message',
      role: 'assistant',
      model: typeof body?.model === 'string' ? body.model : 'claude-fake',
      content,
      stop_reason: reply.stopReason ?? (reply.toolUse?.length ? 'tool_use' : 'end_turn'),
      stop_sequence: null,
      usage,
    };
    this.#totals.calls++;
    this.#totals.inputTokens += usage.input_tokens;
    this.#totals.outputTokens += usage.output_tokens;
    if (body?.stream === true) await sendStream(response, message, reply.stream);
    else sendJson(response, 200, message, { 'request-id': this.#nextId('req') });
  }

  #nextId(prefix: string): string {
    return `${prefix}_fake${String(++this.#ids).padStart(8, '0')}`;
  }
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function invalidRequest(body: any): string | undefined {
  if (typeof body?.model !== 'string' || !body.model) return 'model: Field required';
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return 'max_tokens: Field required';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: at least one message is required';
  return undefined;
}

// Recorded, never required: tests check that a key was sent, the fake accepts any.
function credential(request: IncomingMessage): string | undefined {
  const key = request.headers['x-api-key'];
  if (typeof key === 'string' && key) return key;
  const bearer = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '');
  return bearer?.[1];
}

function errorBody(type: string, message: string): unknown {
  return { type: 'error', error: { type, message } };
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

function sendStatus(response: ServerResponse, reply: StatusReply): void {
  const type = ERROR_TYPES[reply.status] ?? (reply.status >= 500 ? 'api_error' : 'invalid_request_error');
  const body = reply.body ?? errorBody(type, `FakeAnthropic scripted status ${reply.status}`);
  response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
  // A string body goes out as is, so a test can send a malformed reply.
  response.end(typeof body === 'string' ? body : JSON.stringify(body));
}

function quarter(chars: number): number {
  return Math.ceil(chars / 4);
}

function systemText(system: unknown): string {
  if (typeof system === 'string') return system;
  if (Array.isArray(system)) return system.map((block) => (typeof block?.text === 'string' ? block.text : '')).join('\n');
  return '';
}

// The text a block carries: text, a tool result's content, or a tool call's input as JSON.
function blockText(block: any): string {
  if (typeof block === 'string') return block;
  if (block?.type === 'text' && typeof block.text === 'string') return block.text;
  if (block?.type === 'tool_result') return Array.isArray(block.content) ? block.content.map(blockText).join('\n') : String(block.content ?? '');
  if (block?.type === 'tool_use') return JSON.stringify(block.input ?? {});
  return '';
}

function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map(blockText).filter(Boolean).join('\n');
  return '';
}

function lastUserText(messages: unknown): string {
  if (!Array.isArray(messages)) return '';
  const last = messages.findLast((message) => message?.role === 'user');
  if (!last) return '';
  if (typeof last.content === 'string') return last.content;
  if (!Array.isArray(last.content)) return '';
  return last.content.filter((block: any) => block?.type === 'text' || block?.type === 'tool_result').map(blockText).join('\n');
}

function requestChars(body: any): number {
  const messages: unknown[] = Array.isArray(body?.messages) ? body.messages : [];
  return systemText(body?.system).length + messages.reduce<number>((sum, message: any) => sum + messageText(message?.content).length, 0);
}

function replyChars(content: ResponseBlock[]): number {
  return content.reduce((sum, block) => sum + (block.type === 'text' ? block.text.length : JSON.stringify(block.input).length), 0);
}
