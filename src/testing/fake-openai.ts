// A fake OpenAI-compatible Chat Completions API: the wire of OpenAI, Ollama, vLLM and LM Studio, with the same
// script, recorded requests and totals as the fake Messages API.
import type { ServerResponse } from 'node:http';
import {
  FakeLlmServer,
  listenOnLoopback,
  replyUsage,
  sendJson,
  type FakeLlmOptions,
  type FakeWire,
  type MessageReply,
  type StatusReply,
} from './_fake-server.js';
import { halves, pause, type StreamPacing } from './_fake-stream.js';

export type { FakeReply, FakeRequest } from './_fake-server.js';

/** Options of {@link FakeOpenAI.start}. */
export type FakeOpenAIOptions = FakeLlmOptions;

type ToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } };

// The error `type` and `code` OpenAI pairs with each status, so the SDK builds the same error classes.
const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'invalid_request_error',
  404: 'invalid_request_error',
  429: 'rate_limit_exceeded',
  500: 'server_error',
  503: 'server_error',
};

function errorBody(status: number, message: string): unknown {
  return {
    error: {
      message,
      type: ERROR_TYPES[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error'),
      param: null,
      code: null,
    },
  };
}

// The text of a message's content: a string, or text parts.
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part?.text === 'string' ? part.text : '')).join('');
  return '';
}

/** The first check the real API makes that a request fails: model, messages, and tool results answering a call. */
function invalidRequest(body: any): string | undefined {
  if (typeof body?.model !== 'string' || !body.model) return 'you must provide a model parameter';
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    return "'messages' must contain at least one message";
  const open = new Set<string>();
  for (const [index, message] of body.messages.entries()) {
    if (message?.role === 'assistant') {
      if ((message.content === null || message.content === undefined) && !message.tool_calls?.length)
        return `messages[${index}]: an assistant message needs content or tool_calls`;
      for (const call of message.tool_calls ?? []) open.add(call.id);
    } else if (message?.role === 'tool') {
      if (!open.delete(message.tool_call_id))
        return `messages[${index}]: messages with role 'tool' must be a response to a preceding message with 'tool_calls'`;
    } else if (!['system', 'developer', 'user'].includes(message?.role))
      return `messages[${index}]: unknown role ${JSON.stringify(message?.role)}`;
  }
  return undefined;
}

/** The system prompt, and the last user turn: the results of the tools just called, else the last user message. */
function texts(body: any): { system: string; lastUserText: string; turns: number } {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  const system = messages
    .filter((message) => message?.role === 'system' || message?.role === 'developer')
    .map((message) => contentText(message.content))
    .join('\n');
  const results: string[] = [];
  for (let index = messages.length - 1; index >= 0 && messages[index]?.role === 'tool'; index--)
    results.unshift(contentText(messages[index].content));
  const lastUser = messages.findLast((message) => message?.role === 'user');
  const turns = messages.filter((message) => message?.role !== 'system' && message?.role !== 'developer').length;
  return { system, lastUserText: results.length ? results.join('\n') : contentText(lastUser?.content), turns };
}

function requestChars(body: any): number {
  const messages: any[] = Array.isArray(body?.messages) ? body.messages : [];
  return messages.reduce<number>(
    (sum, message) =>
      sum +
      contentText(message?.content).length +
      (message?.tool_calls ?? []).reduce((calls: number, call: ToolCall) => calls + call.function.arguments.length, 0),
    0,
  );
}

// The chat.completions wire: `POST /v1/chat/completions`, its error shape, its completion and its chunk stream.
function chatWire(tokenModel: 'fixed' | 'chars'): FakeWire {
  return {
    name: 'FakeOpenAI',
    path: '/v1/chat/completions',
    invalid: invalidRequest,
    texts,
    sendError: (response, status, message) => sendJson(response, status, errorBody(status, message)),
    sendStatus(response: ServerResponse, reply: StatusReply) {
      sendJson(
        response,
        reply.status,
        reply.body ?? errorBody(reply.status, `FakeOpenAI scripted status ${reply.status}`),
        reply.headers,
      );
    },
    async sendMessage(response, body, reply: MessageReply, ids) {
      const calls: ToolCall[] = (reply.toolUse ?? []).map((call) => ({
        id: call.id ?? ids('call'),
        type: 'function',
        function: { name: call.name, arguments: JSON.stringify(call.input ?? {}) },
      }));
      const text = reply.text ?? (calls.length ? null : '');
      const usage = replyUsage(
        reply,
        tokenModel,
        () => requestChars(body),
        () => (text ?? '').length + calls.reduce((sum, call) => sum + call.function.arguments.length, 0),
      );
      const completion = {
        id: ids('chatcmpl'),
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: typeof body?.model === 'string' ? body.model : 'gpt-fake',
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: text,
              refusal: null,
              ...(calls.length ? { tool_calls: calls } : {}),
            },
            finish_reason: reply.stopReason ?? (calls.length ? 'tool_calls' : 'stop'),
            logprobs: null,
          },
        ],
        usage: {
          prompt_tokens: usage.inputTokens,
          completion_tokens: usage.outputTokens,
          total_tokens: usage.inputTokens + usage.outputTokens,
        },
      };
      if (body?.stream === true)
        await sendChunks(response, completion, text, calls, body?.stream_options?.include_usage === true, reply.stream);
      else sendJson(response, 200, completion, { 'x-request-id': ids('req') });
      return usage;
    },
  };
}

/**
 * Writes a completion as the chunk stream of the real API (text deltas paced as scripted, tool calls with their
 * arguments in pieces, the usage chunk when asked for, then `[DONE]`). Stops when the client closes the connection.
 */
async function sendChunks(
  response: ServerResponse,
  completion: { id: string; created: number; model: string; choices: { finish_reason: string }[]; usage: unknown },
  text: string | null,
  calls: ToolCall[],
  withUsage: boolean,
  pacing?: StreamPacing,
): Promise<void> {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  response.flushHeaders();
  const send = (choices: unknown[], rest: Record<string, unknown> = {}) =>
    response.write(
      `data: ${JSON.stringify({ id: completion.id, object: 'chat.completion.chunk', created: completion.created, model: completion.model, choices, ...rest })}\n\n`,
    );
  const delta = (value: Record<string, unknown>, finish: string | null = null) =>
    send([{ index: 0, delta: value, finish_reason: finish, logprobs: null }]);
  delta({ role: 'assistant', content: '' });
  for (const [number, piece] of (pacing?.chunks ?? halves(text ?? '')).entries()) {
    await pause(pacing, number);
    if (response.destroyed) return;
    delta({ content: piece });
  }
  for (const [index, call] of calls.entries()) {
    delta({
      tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }],
    });
    for (const piece of halves(call.function.arguments))
      delta({ tool_calls: [{ index, function: { arguments: piece } }] });
  }
  delta({}, completion.choices[0]!.finish_reason);
  if (withUsage) send([], { usage: completion.usage });
  response.write('data: [DONE]\n\n');
  response.end();
}

/**
 * A fake OpenAI-compatible Chat Completions API on loopback, scripted reply by reply (the script of
 * {@link FakeAnthropic}), for tests that drive the real `openai` SDK.
 * @example
 * const fake = await FakeOpenAI.start({ replies: ['Hello'] });
 * const model = new OpenAIModel({ baseURL: fake.url, apiKey: 'test-key', maxRetries: 0 });
 */
export class FakeOpenAI extends FakeLlmServer {
  /** Base URL for OPENAI_BASE_URL, `--llm-base-url` or the SDK's `baseURL` (with `/v1`). */
  readonly url: string;
  /** The provider whose wire it speaks. */
  readonly provider = 'openai';

  private constructor(server: Awaited<ReturnType<typeof listenOnLoopback>>, options: FakeOpenAIOptions) {
    super(server, chatWire(options.tokenModel ?? 'fixed'), options);
    this.url = `${this.origin}/v1`;
  }

  /** Starts a fake on 127.0.0.1 on a free port. */
  static async start(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
    return new FakeOpenAI(await listenOnLoopback(), options);
  }
}
