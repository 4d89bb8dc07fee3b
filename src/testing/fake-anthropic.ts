import type { ServerResponse } from 'node:http';
import { invalidRequest, lastUserText, replyChars, requestChars, systemText } from './_fake-request.js';
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
import { sendStream, type ResponseBlock } from './_fake-stream.js';

export type { StreamPacing } from './_fake-stream.js';
export type { FakeReply, FakeRequest } from './_fake-server.js';

/** Options of {@link FakeAnthropic.start}. */
export type FakeAnthropicOptions = FakeLlmOptions;

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

function errorBody(type: string, message: string): unknown {
  return { type: 'error', error: { type, message } };
}

function errorType(status: number): string {
  return ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

// The Messages API's wire: `POST /v1/messages`, its error shape, its message and its event stream.
function messagesWire(tokenModel: 'fixed' | 'chars'): FakeWire {
  return {
    name: 'FakeAnthropic',
    path: '/v1/messages',
    invalid: invalidRequest,
    texts: (body) => ({
      system: systemText(body?.system),
      lastUserText: lastUserText(body?.messages),
      turns: Array.isArray(body?.messages) ? body.messages.length : 0,
    }),
    sendError: (response, status, message) => sendJson(response, status, errorBody(errorType(status), message)),
    sendStatus(response: ServerResponse, reply: StatusReply) {
      sendJson(
        response,
        reply.status,
        reply.body ?? errorBody(errorType(reply.status), `FakeAnthropic scripted status ${reply.status}`),
        reply.headers,
      );
    },
    async sendMessage(response, body, reply: MessageReply, ids) {
      const content: ResponseBlock[] = [];
      if (reply.text !== undefined || !reply.toolUse?.length) content.push({ type: 'text', text: reply.text ?? '' });
      for (const call of reply.toolUse ?? [])
        content.push({ type: 'tool_use', id: call.id ?? ids('toolu'), name: call.name, input: call.input ?? {} });
      const usage = replyUsage(
        reply,
        tokenModel,
        () => requestChars(body),
        () => replyChars(content),
      );
      const message = {
        id: ids('msg'),
        type: 'message',
        role: 'assistant',
        model: typeof body?.model === 'string' ? body.model : 'claude-fake',
        content,
        stop_reason: reply.stopReason ?? (reply.toolUse?.length ? 'tool_use' : 'end_turn'),
        stop_sequence: null,
        usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens },
      };
      if (body?.stream === true) await sendStream(response, message, reply.stream);
      else sendJson(response, 200, message, { 'request-id': ids('req') });
      return usage;
    },
  };
}

/**
 * A fake Anthropic Messages API on loopback, scripted reply by reply, for tests that drive the real SDK.
 * @example
 * const fake = await FakeAnthropic.start({ replies: ['Hello'] });
 * const model = new AnthropicModel({ baseURL: fake.url, apiKey: 'test-key' });
 */
export class FakeAnthropic extends FakeLlmServer {
  /** Base URL for ANTHROPIC_BASE_URL or the SDK's `baseURL` (without `/v1`). */
  readonly url: string;
  /** The provider whose wire it speaks. */
  readonly provider = 'anthropic';

  private constructor(server: Awaited<ReturnType<typeof listenOnLoopback>>, options: FakeAnthropicOptions) {
    super(server, messagesWire(options.tokenModel ?? 'fixed'), options);
    this.url = this.origin;
  }

  /** Starts a fake on 127.0.0.1 on a free port. */
  static async start(options: FakeAnthropicOptions = {}): Promise<FakeAnthropic> {
    return new FakeAnthropic(await listenOnLoopback(), options);
  }
}
